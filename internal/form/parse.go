package form

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"reflect"
	"sort"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Problem is one thing wrong with a definition, located as precisely as the
// parser can: the form, the field and the line of the source.
type Problem struct {
	Form  string
	Field string
	Line  int
	Msg   string
}

func (p Problem) String() string {
	var b strings.Builder
	if p.Form != "" {
		fmt.Fprintf(&b, "form %q: ", p.Form)
	}
	if p.Field != "" {
		fmt.Fprintf(&b, "field %q: ", p.Field)
	}
	b.WriteString(p.Msg)
	if p.Line > 0 {
		fmt.Fprintf(&b, " (line %d)", p.Line)
	}
	return b.String()
}

// DefinitionError lists everything wrong with a set of definitions, so the
// owner can fix them all in one pass.
type DefinitionError struct {
	Source   string
	Problems []Problem
}

func (e *DefinitionError) Error() string {
	var b strings.Builder
	if e.Source != "" {
		fmt.Fprintf(&b, "%s: ", e.Source)
	}
	if len(e.Problems) == 1 {
		b.WriteString(e.Problems[0].String())
		return b.String()
	}
	fmt.Fprintf(&b, "%d problems:", len(e.Problems))
	for _, p := range e.Problems {
		b.WriteString("\n  - ")
		b.WriteString(p.String())
	}
	return b.String()
}

// Parse reads form definitions from YAML or JSON: one form, a list of forms,
// or several YAML documents. It checks every key against the contract and
// every value for sense, and returns the compiled forms or a
// *DefinitionError that names each problem. source names the input in
// errors (a file name, or "" ).
func Parse(src []byte, source string) ([]*Form, error) {
	defs, err := Decode(src, source)
	if err != nil {
		return nil, err
	}
	derr := &DefinitionError{Source: source}
	forms := make([]*Form, 0, len(defs))
	seen := map[string]bool{}
	for _, d := range defs {
		if seen[d.ID] && d.ID != "" {
			derr.Problems = append(derr.Problems, Problem{Form: d.ID, Msg: "declared twice in this input; each form id must be unique"})
			continue
		}
		seen[d.ID] = true
		f, err := Compile(d)
		if err != nil {
			var de *DefinitionError
			if errors.As(err, &de) {
				derr.Problems = append(derr.Problems, de.Problems...)
				continue
			}
			return nil, err
		}
		forms = append(forms, f)
	}
	if len(derr.Problems) > 0 {
		return nil, derr
	}
	return forms, nil
}

// Decode reads definitions without compiling them, checking only the
// structure and the names of keys.
func Decode(src []byte, source string) ([]Definition, error) {
	derr := &DefinitionError{Source: source}
	dec := yaml.NewDecoder(bytes.NewReader(src))
	var defs []Definition
	for {
		var doc yaml.Node
		err := dec.Decode(&doc)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			derr.Problems = append(derr.Problems, Problem{Msg: "not valid YAML or JSON: " + strings.TrimPrefix(err.Error(), "yaml: ")})
			return nil, derr
		}
		if len(doc.Content) == 0 {
			continue
		}
		root := doc.Content[0]
		var nodes []*yaml.Node
		switch root.Kind {
		case yaml.MappingNode:
			if list := mapValue(root, "forms"); list != nil && len(root.Content) == 2 {
				// {forms: [...]} is a list under a name, as a JSON API body has it.
				root = list
				if root.Kind != yaml.SequenceNode {
					derr.Problems = append(derr.Problems, Problem{Line: root.Line, Msg: "forms: want a list of forms"})
					continue
				}
				nodes = root.Content
			} else {
				nodes = []*yaml.Node{root}
			}
		case yaml.SequenceNode:
			nodes = root.Content
		default:
			derr.Problems = append(derr.Problems, Problem{Line: root.Line, Msg: "want a form (a map with id and fields) or a list of forms"})
			continue
		}
		for _, n := range nodes {
			d, probs := decodeOne(n)
			derr.Problems = append(derr.Problems, probs...)
			if len(probs) == 0 {
				defs = append(defs, d)
			}
		}
	}
	if len(derr.Problems) > 0 {
		return nil, derr
	}
	if len(defs) == 0 {
		derr.Problems = append(derr.Problems, Problem{Msg: "no form definitions found"})
		return nil, derr
	}
	return defs, nil
}

func decodeOne(n *yaml.Node) (Definition, []Problem) {
	var d Definition
	if n.Kind != yaml.MappingNode {
		return d, []Problem{{Line: n.Line, Msg: "want a form (a map with id and fields)"}}
	}
	id := ""
	if v := mapValue(n, "id"); v != nil {
		id = v.Value
	}
	var probs []Problem
	probs = append(probs, checkKeys(n, reflect.TypeFor[Definition](), id, "")...)
	if fs := mapValue(n, "fields"); fs != nil && fs.Kind == yaml.SequenceNode {
		for _, f := range fs.Content {
			name := ""
			if v := mapValue(f, "name"); v != nil {
				name = v.Value
			}
			if f.Kind != yaml.MappingNode {
				probs = append(probs, Problem{Form: id, Line: f.Line, Msg: "fields: each field must be a map with name and type"})
				continue
			}
			probs = append(probs, checkKeys(f, reflect.TypeFor[Field](), id, name)...)
			if opts := mapValue(f, "options"); opts != nil && opts.Kind == yaml.SequenceNode {
				for _, o := range opts.Content {
					if o.Kind == yaml.MappingNode {
						probs = append(probs, checkKeys(o, reflect.TypeFor[Option](), id, name)...)
					}
				}
			}
		}
	}
	if s := mapValue(n, "spam"); s != nil && s.Kind == yaml.MappingNode {
		probs = append(probs, checkKeys(s, reflect.TypeFor[SpamRules](), id, "")...)
	}
	if r := mapValue(n, "rate_limit"); r != nil && r.Kind == yaml.MappingNode {
		probs = append(probs, checkKeys(r, reflect.TypeFor[RateLimit](), id, "")...)
	}
	if len(probs) > 0 {
		return d, probs
	}
	if err := n.Decode(&d); err != nil {
		return d, []Problem{{Form: id, Line: n.Line, Msg: cleanYAMLError(err)}}
	}
	src, err := yaml.Marshal(n)
	if err != nil {
		return d, []Problem{{Form: id, Line: n.Line, Msg: cleanYAMLError(err)}}
	}
	d.source = src
	return d, nil
}

// checkKeys refuses keys that the type does not declare, naming the valid
// ones, so that a typo such as `requried` is not silently ignored.
func checkKeys(n *yaml.Node, t reflect.Type, form, field string) []Problem {
	valid := map[string]bool{}
	var names []string
	for i := range t.NumField() {
		tag := strings.Split(t.Field(i).Tag.Get("yaml"), ",")[0]
		if tag == "" || tag == "-" {
			continue
		}
		valid[tag] = true
		names = append(names, tag)
	}
	sort.Strings(names)
	var probs []Problem
	for i := 0; i+1 < len(n.Content); i += 2 {
		k := n.Content[i]
		if !valid[k.Value] {
			what := "setting"
			if field != "" || t == reflect.TypeFor[Field]() {
				what = "field setting"
			}
			probs = append(probs, Problem{Form: form, Field: field, Line: k.Line,
				Msg: fmt.Sprintf("unknown %s %q; valid: %s", what, k.Value, strings.Join(names, ", "))})
		}
	}
	return probs
}

func mapValue(n *yaml.Node, key string) *yaml.Node {
	if n.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return n.Content[i+1]
		}
	}
	return nil
}

func cleanYAMLError(err error) string {
	s := strings.TrimPrefix(err.Error(), "yaml: ")
	s = strings.TrimPrefix(s, "unmarshal errors:\n  ")
	s = strings.ReplaceAll(s, "\n  ", "; ")
	return s
}
