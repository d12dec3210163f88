package form

import (
	"fmt"
	"math/big"
	"regexp"
	"slices"
	"strings"
)

// Conditions (DESIGN §5): a field's show_if says when it is shown, from
// the answers to earlier fields. The rule is one specification that the
// server (here) and the page (sdk/js/conditions.js) both evaluate, and
// testdata/conditions.json holds the vectors both test suites run, so the
// two cannot drift; the server's answer is the one that counts. A field
// not shown is not required, and a value sent for it is not stored (the
// submission lists it under ignored).
//
// The rule, on answers as lists of strings (a single value is one
// string; a multiselect its choices; a checked checkbox "true", an
// unchecked one no answer; a number its digits; a field not shown no
// answer, whatever was sent for it):
//
//   - {field: F, equals: V}: F's answer has V among its values (numbers
//     compared as numbers, every other value exactly);
//   - {field: F, in: [V…]}: F's answer has one of the Vs among its values;
//   - {field: F, not: V}: the negation of equals (true when F has no
//     answer);
//   - {field: F, answered: true|false}: F has an answer, or has none;
//   - {all: [C…]}: every C holds (true when empty); {any: [C…]}: one does.

// Condition is a show_if: one test on an earlier field, or all/any of
// several.
type Condition struct {
	Field    string      `yaml:"field" json:"field,omitempty"`
	Equals   *string     `yaml:"equals" json:"equals,omitempty"`
	In       []string    `yaml:"in" json:"in,omitempty"`
	Not      *string     `yaml:"not" json:"not,omitempty"`
	Answered *bool       `yaml:"answered" json:"answered,omitempty"`
	All      []Condition `yaml:"all" json:"all,omitempty"`
	Any      []Condition `yaml:"any" json:"any,omitempty"`
}

// Holds evaluates the condition on the answers (by field name, see the
// package's rule).
func (c *Condition) Holds(answer func(field string) []string) bool {
	switch {
	case c.All != nil:
		for i := range c.All {
			if !c.All[i].Holds(answer) {
				return false
			}
		}
		return true
	case c.Any != nil:
		for i := range c.Any {
			if c.Any[i].Holds(answer) {
				return true
			}
		}
		return false
	}
	vals := answer(c.Field)
	switch {
	case c.Equals != nil:
		return hasValue(vals, *c.Equals)
	case c.Not != nil:
		return !hasValue(vals, *c.Not)
	case c.In != nil:
		for _, v := range c.In {
			if hasValue(vals, v) {
				return true
			}
		}
		return false
	case c.Answered != nil:
		return (len(vals) > 0) == *c.Answered
	}
	return true
}

var decimalRe = regexp.MustCompile(`^-?[0-9]+(\.[0-9]+)?$`)

// hasValue says whether want is among vals: exactly, or as numbers when
// both are decimal numbers (3 and 3.0 are one answer).
func hasValue(vals []string, want string) bool {
	for _, v := range vals {
		if v == want {
			return true
		}
		if decimalRe.MatchString(v) && decimalRe.MatchString(want) {
			a, _ := new(big.Rat).SetString(v)
			b, _ := new(big.Rat).SetString(want)
			if a.Cmp(b) == 0 {
				return true
			}
		}
	}
	return false
}

// Shown evaluates every field's show_if in field order on the answers,
// a field not shown counting as unanswered for the fields after it.
func Shown(fields []Field, answer func(field string) []string) map[string]bool {
	shown := make(map[string]bool, len(fields))
	visible := func(name string) []string {
		if !shown[name] {
			return nil
		}
		return answer(name)
	}
	for _, fd := range fields {
		shown[fd.Name] = fd.ShowIf == nil || fd.ShowIf.Holds(visible)
	}
	return shown
}

// AnswerOf turns a value as decoded from JSON (a string, a number, a
// bool, a list of those, or nil) into an answer for conditions: the
// vectors' form, and the page's.
func AnswerOf(v any) []string {
	switch x := v.(type) {
	case nil:
		return nil
	case string:
		if strings.TrimSpace(x) == "" {
			return nil
		}
		return []string{strings.TrimSpace(x)}
	case bool:
		if x {
			return []string{"true"}
		}
		return nil
	case []any:
		var out []string
		for _, it := range x {
			out = append(out, AnswerOf(it)...)
		}
		return out
	default:
		return []string{fmt.Sprint(x)}
	}
}

// answer is a normalized value as conditions see it.
func (v value) answer() []string {
	switch {
	case !v.set:
		return nil
	case v.kind == 'b':
		if v.s == "true" {
			return []string{"true"}
		}
		return nil
	case v.kind == 'l':
		return strings.Split(v.s, listSep)
	}
	return []string{v.s}
}

// checkCondition refuses a show_if that names a later or unknown field,
// mixes tests, or compares a choice field with a value it does not offer.
// earlier are the fields before this one, by name.
func (c *compiler) checkCondition(field string, cond *Condition, earlier map[string]*Field, all map[string]bool, path string) {
	tests := 0
	for _, set := range []bool{cond.Equals != nil, cond.In != nil, cond.Not != nil, cond.Answered != nil} {
		if set {
			tests++
		}
	}
	switch {
	case cond.All != nil || cond.Any != nil:
		if cond.All != nil && cond.Any != nil || tests > 0 || cond.Field != "" {
			c.add(field, fmt.Sprintf("%s: all and any each stand alone; put the other tests inside them", path))
			return
		}
		list, name := cond.All, "all"
		if cond.Any != nil {
			list, name = cond.Any, "any"
		}
		if len(list) == 0 {
			c.add(field, fmt.Sprintf("%s.%s is empty; list the conditions it combines", path, name))
		}
		for i := range list {
			c.checkCondition(field, &list[i], earlier, all, fmt.Sprintf("%s.%s[%d]", path, name, i))
		}
		return
	case cond.Field == "":
		c.add(field, fmt.Sprintf("%s names no field; write {field: NAME, equals: VALUE} (or in, not, answered), or all/any", path))
		return
	case tests != 1:
		c.add(field, fmt.Sprintf("%s on %q needs exactly one of equals, in, not, answered", path, cond.Field))
		return
	case cond.In != nil && len(cond.In) == 0:
		c.add(field, fmt.Sprintf("%s.in is empty; list the values that show the field", path))
	}
	target, ok := earlier[cond.Field]
	if !ok {
		if all[cond.Field] {
			c.add(field, fmt.Sprintf("%s names %q, which comes after this field; a condition may name only earlier fields", path, cond.Field))
		} else {
			c.add(field, fmt.Sprintf("%s names %q, which is not a field of this form", path, cond.Field))
		}
		return
	}
	if target.Type == TypeSelect || target.Type == TypeMultiselect {
		var vals []string
		if cond.Equals != nil {
			vals = append(vals, *cond.Equals)
		}
		if cond.Not != nil {
			vals = append(vals, *cond.Not)
		}
		vals = append(vals, cond.In...)
		for _, v := range vals {
			if !slices.ContainsFunc(target.Options, func(o Option) bool { return o.Value == v }) {
				c.add(field, fmt.Sprintf("%s compares %q with %q, which is not one of its options", path, cond.Field, v))
			}
		}
	}
}
