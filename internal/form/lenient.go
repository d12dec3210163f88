package form

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// A definition is read one setting at a time, so that one value of the
// wrong type (`capacity: two`, `per: 1 minute`) is one problem, said in
// plain words with its line, and every other setting of the form is still
// read and checked: `formd forms check` reports every problem of a file
// in one run, not the first of each form.

// lenientStructs are the settings read key by key; any other type is read
// whole (a Text, a Bound, a Duration, a time).
var lenientStructs = map[reflect.Type]bool{
	reflect.TypeFor[Definition]():     true,
	reflect.TypeFor[SiteDefinition](): true,
	reflect.TypeFor[Field]():          true,
	reflect.TypeFor[SpamRules]():      true,
	reflect.TypeFor[RateLimit]():      true,
	reflect.TypeFor[Notify]():         true,
	reflect.TypeFor[Webhook]():        true,
	reflect.TypeFor[EmailSetup]():     true,
}

// decodeLenient reads the mapping n into the struct v (addressable), key
// by key: a value that does not fit its type becomes a problem and leaves
// its setting unset; unknown keys are left to checkKeys. bad collects the
// lines of the values that did not fit.
func decodeLenient(n *yaml.Node, v reflect.Value, form, field string, bad map[int]bool) []Problem {
	t := v.Type()
	byTag := map[string]int{}
	for i := range t.NumField() {
		tag := strings.Split(t.Field(i).Tag.Get("yaml"), ",")[0]
		if tag != "" && tag != "-" {
			byTag[tag] = i
		}
	}
	var probs []Problem
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, val := n.Content[i], n.Content[i+1]
		idx, ok := byTag[k.Value]
		if !ok {
			continue
		}
		fv := v.Field(idx)
		ft := fv.Type()
		elem, isPtr := ft, false
		if ft.Kind() == reflect.Pointer {
			elem, isPtr = ft.Elem(), true
		}
		switch {
		case val.Kind == yaml.MappingNode && lenientStructs[elem] && !(elem == reflect.TypeFor[RateLimit]() && val.Tag == "!!str"):
			nv := reflect.New(elem)
			probs = append(probs, decodeLenient(val, nv.Elem(), form, field, bad)...)
			if isPtr {
				fv.Set(nv)
			} else {
				fv.Set(nv.Elem())
			}
		case val.Kind == yaml.SequenceNode && ft.Kind() == reflect.Slice && lenientStructs[ft.Elem()]:
			list := reflect.MakeSlice(ft, 0, len(val.Content))
			for _, item := range val.Content {
				nv := reflect.New(ft.Elem())
				if item.Kind == yaml.MappingNode {
					name := field
					if ft.Elem() == reflect.TypeFor[Field]() {
						name = ""
						if nm := mapValue(item, "name"); nm != nil {
							name = nm.Value
						}
					}
					probs = append(probs, decodeLenient(item, nv.Elem(), form, name, bad)...)
				} else if err := item.Decode(nv.Interface()); err != nil {
					bad[item.Line] = true
					probs = append(probs, plainProblem(k.Value, item, ft.Elem(), err, form, field))
					continue
				}
				list = reflect.Append(list, nv.Elem())
			}
			fv.Set(list)
		default:
			nv := reflect.New(ft)
			if err := val.Decode(nv.Interface()); err != nil {
				bad[val.Line] = true
				bad[k.Line] = true
				probs = append(probs, plainProblem(k.Value, val, ft, err, form, field))
				continue
			}
			fv.Set(nv.Elem())
		}
	}
	return probs
}

// plainProblem says in plain words why a value does not fit its setting:
// "capacity must be a whole number, got "two"", with the value's line.
func plainProblem(key string, val *yaml.Node, t reflect.Type, err error, form, field string) Problem {
	p := Problem{Form: form, Field: field, Line: val.Line}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	var te *yaml.TypeError
	switch {
	case t == reflect.TypeFor[time.Time]():
		p.Msg = key + " must be an RFC 3339 time with its offset, such as 2027-03-01T09:00:00+08:00"
	case errors.As(err, &te):
		p.Msg = fmt.Sprintf("%s must be %s, got %s", key, kindWords(t), gotWords(val, te))
		if l := yamlLine(errors.New(strings.TrimPrefix(te.Errors[0], "yaml: "))); l > 0 {
			p.Line = l
		}
	default:
		p.Msg = key + ": " + strings.TrimPrefix(err.Error(), "yaml: ")
	}
	return p
}

// kindWords is what a value of type t is, for a person.
func kindWords(t reflect.Type) string {
	switch t.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return "a whole number"
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "a whole number, 0 or more"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Bool:
		return "true or false"
	case reflect.String:
		return "text"
	case reflect.Slice:
		if t.Elem().Kind() == reflect.Slice {
			return "a list of lists, such as [[phone]]"
		}
		return "a list, such as [a, b]"
	}
	return "a map of settings"
}

// gotWords is the value that did not fit: the scalar quoted, else its
// shape; for a list whose item did not fit, that item.
func gotWords(val *yaml.Node, te *yaml.TypeError) string {
	if val.Kind == yaml.ScalarNode {
		return fmt.Sprintf("%q", val.Value)
	}
	if len(te.Errors) > 0 {
		// "line 7: cannot unmarshal !!str `x` into int": the item.
		if _, rest, ok := strings.Cut(te.Errors[0], "`"); ok {
			if v, _, ok := strings.Cut(rest, "`"); ok {
				return fmt.Sprintf("%q in it", v)
			}
		}
	}
	switch val.Kind {
	case yaml.SequenceNode:
		return "a list"
	case yaml.MappingNode:
		return "a map"
	}
	return "something else"
}
