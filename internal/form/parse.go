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
// *DefinitionError that names every problem of the input at once, each
// with its line. source names the input in errors (a file name, or "").
func Parse(src []byte, source string) ([]*Form, error) { return ParseChecked(src, source, nil) }

// ParseChecked is Parse with webhook URLs checked by checkURL (see
// CompileChecked).
func ParseChecked(src []byte, source string, checkURL func(string) error) ([]*Form, error) {
	set, err := ParseSet(src, source, checkURL)
	return set.Forms, err
}

// Set is what an input declares: forms, and sites' settings.
type Set struct {
	Forms []*Form
	Sites []*Site
}

// IDs lists the forms' and sites' ids, sites as @site.
func (s Set) IDs() []string {
	var out []string
	for _, f := range s.Forms {
		out = append(out, f.ID())
	}
	for _, st := range s.Sites {
		out = append(out, SiteRecordID(st.ID()))
	}
	return out
}

// Warnings are what formd forms check says of definitions that check but
// may not do what their owner meant; the admin API's tools say the same.
func (s Set) Warnings() []string {
	var out []string
	for _, f := range s.Forms {
		if len(f.Def.Origins) == 0 {
			out = append(out, fmt.Sprintf("warning: form %q lists no origins: only its hosted page (/f/%s), servers and mini-programs can send to it; a page of another site that uses the SDK is refused (origin-not-allowed). Add origins: [https://your-site.example] to allow one.", f.ID(), f.ID()))
		}
	}
	return out
}

// ParseSet reads forms and sites' settings from an input, as Parse does.
func ParseSet(src []byte, source string, checkURL func(string) error) (Set, error) {
	docs, derr := decodeAll(src, source)
	var set Set
	seenSite := map[string]bool{}
	for _, sd := range derr.sites {
		if seenSite[sd.def.Site] {
			derr.Problems = append(derr.Problems, Problem{Line: sd.node.Line, Msg: "site " + sd.def.Site + ": declared twice in this input"})
			continue
		}
		seenSite[sd.def.Site] = true
		site, probs := compileSite(sd.def, sd.source, checkURL)
		for i := range probs {
			probs[i].Line = sd.node.Line
		}
		derr.Problems = append(derr.Problems, probs...)
		if site != nil {
			set.Sites = append(set.Sites, site)
		}
	}
	forms := make([]*Form, 0, len(docs))
	seen := map[string]bool{}
	for _, doc := range docs {
		d := doc.def
		if seen[d.ID] && d.ID != "" {
			derr.Problems = append(derr.Problems, Problem{Form: d.ID, Line: doc.node.Line, Msg: "declared twice in this input; each form id must be unique"})
			continue
		}
		seen[d.ID] = true
		if doc.undecodable {
			continue // its values did not decode: compiling would only guess
		}
		f, err := CompileChecked(d, checkURL)
		if err != nil {
			var de *DefinitionError
			if !errors.As(err, &de) {
				return Set{}, err
			}
			for _, p := range de.Problems {
				p.Line = doc.lineOf(p)
				if doc.badLines[p.Line] {
					continue // the value that did not fit, said already
				}
				derr.Problems = append(derr.Problems, p)
			}
			continue
		}
		forms = append(forms, f)
	}
	if len(derr.Problems) > 0 {
		sort.SliceStable(derr.Problems, func(i, j int) bool { return derr.Problems[i].Line < derr.Problems[j].Line })
		return Set{}, derr.DefinitionError
	}
	set.Forms = forms
	return set, nil
}

// decoded is one form's definition as read, with its YAML node for the
// lines of problems found later.
type decoded struct {
	def  Definition
	node *yaml.Node
	// undecodable says the form's shape is wrong (a field that is not a
	// map): compiling would only guess.
	undecodable bool
	// badLines are the lines of values that did not fit their type (and
	// were left unset); compiling's problems there only repeat them.
	badLines map[int]bool
}

// lineOf finds the line of a compiled form's problem: the setting the
// message starts with, in the field it names (or the form), else the
// field's or the form's first line.
func (d decoded) lineOf(p Problem) int {
	n := d.node
	if p.Field != "" {
		if fs := mapValue(n, "fields"); fs != nil {
			for _, f := range fs.Content {
				if v := mapValue(f, "name"); v != nil && v.Value == p.Field {
					n = f
					if p.Msg != duplicateField {
						break // the first of the name; a duplicate is the last
					}
				}
			}
		}
	}
	setting := strings.FieldsFunc(p.Msg, func(r rune) bool { return r == ' ' || r == '[' || r == '.' || r == ':' })
	if len(setting) > 0 {
		for i := 0; i+1 < len(n.Content); i += 2 {
			if n.Content[i].Value == setting[0] {
				return n.Content[i].Line
			}
		}
	}
	return n.Line
}

// Decode reads definitions without compiling them, checking only the
// structure, the names of keys and the types of values.
func Decode(src []byte, source string) ([]Definition, error) {
	docs, derr := decodeAll(src, source)
	if len(derr.Problems) > 0 {
		return nil, derr.DefinitionError
	}
	defs := make([]Definition, len(docs))
	for i, d := range docs {
		defs[i] = d.def
	}
	return defs, nil
}

// decodeErrors are the problems of an input, and the sites' settings it
// declares beside its forms.
type decodeErrors struct {
	*DefinitionError
	sites []decodedSite
}

// decodedSite is a site's settings as read.
type decodedSite struct {
	def    SiteDefinition
	node   *yaml.Node
	source []byte
}

// decodeAll reads every definition of the input, collecting every problem
// of structure, keys and value types rather than stopping at the first.
func decodeAll(src []byte, source string) ([]decoded, *decodeErrors) {
	derr := &decodeErrors{DefinitionError: &DefinitionError{Source: source}}
	dec := yaml.NewDecoder(bytes.NewReader(src))
	var docs []decoded
	for {
		var doc yaml.Node
		err := dec.Decode(&doc)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			derr.Problems = append(derr.Problems, Problem{Line: yamlLine(err), Msg: "not valid YAML or JSON: " + strings.TrimPrefix(err.Error(), "yaml: ")})
			return docs, derr
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
			if n.Kind == yaml.MappingNode && isSiteDoc(n) {
				sd, probs := decodeSite(n)
				derr.Problems = append(derr.Problems, probs...)
				if len(probs) == 0 {
					derr.sites = append(derr.sites, sd)
				}
				continue
			}
			d, probs, ok := decodeOne(n)
			derr.Problems = append(derr.Problems, probs...)
			if ok {
				docs = append(docs, d)
			}
		}
	}
	if len(docs) == 0 && len(derr.sites) == 0 && len(derr.Problems) == 0 {
		derr.Problems = append(derr.Problems, Problem{Msg: "no form definitions found"})
	}
	return docs, derr
}

// decodeSite reads a site's settings.
func decodeSite(n *yaml.Node) (decodedSite, []Problem) {
	sd := decodedSite{node: n}
	probs := checkKeys(n, reflect.TypeFor[SiteDefinition](), "", "")
	if nt := mapValue(n, "notify"); nt != nil && nt.Kind == yaml.MappingNode {
		probs = append(probs, checkKeys(nt, reflect.TypeFor[Notify](), "", "")...)
	}
	probs = append(probs, decodeLenient(n, reflect.ValueOf(&sd.def).Elem(), "", "", map[int]bool{})...)
	src, err := yaml.Marshal(n)
	if err != nil {
		probs = append(probs, Problem{Line: n.Line, Msg: cleanYAMLError(err)})
	}
	sd.source = src
	return sd, probs
}

// yamlLine is the line a YAML error names, or 0.
func yamlLine(err error) int {
	var n int
	if _, e := fmt.Sscanf(strings.TrimPrefix(err.Error(), "yaml: "), "line %d:", &n); e == nil {
		return n
	}
	return 0
}

// decodeOne reads one form: problems of unknown keys, and of values that
// do not fit their types (each with its line and what would fit). ok is
// false when it is not a form at all.
func decodeOne(n *yaml.Node) (decoded, []Problem, bool) {
	d := decoded{node: n}
	if n.Kind != yaml.MappingNode {
		return d, []Problem{{Line: n.Line, Msg: "want a form (a map with id and fields)"}}, false
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
				d.undecodable = true
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
	if nt := mapValue(n, "notify"); nt != nil && nt.Kind == yaml.MappingNode {
		probs = append(probs, checkKeys(nt, reflect.TypeFor[Notify](), id, "")...)
		if ws := mapValue(nt, "webhooks"); ws != nil && ws.Kind == yaml.SequenceNode {
			for _, w := range ws.Content {
				if w.Kind == yaml.MappingNode {
					probs = append(probs, checkKeys(w, reflect.TypeFor[Webhook](), id, "")...)
				}
			}
		}
		if e := mapValue(nt, "email"); e != nil && e.Kind == yaml.MappingNode {
			probs = append(probs, checkKeys(e, reflect.TypeFor[EmailSetup](), id, "")...)
		}
	}
	if s := mapValue(n, "spam"); s != nil && s.Kind == yaml.MappingNode {
		probs = append(probs, checkKeys(s, reflect.TypeFor[SpamRules](), id, "")...)
	}
	if r := mapValue(n, "rate_limit"); r != nil && r.Kind == yaml.MappingNode {
		probs = append(probs, checkKeys(r, reflect.TypeFor[RateLimit](), id, "")...)
	}
	// Each setting is read alone (lenient.go): a value of the wrong type
	// is its own problem, and the rest of the form is still read and
	// compiled, so that every problem of the file shows in one run.
	d.badLines = map[int]bool{}
	probs = append(probs, decodeLenient(n, reflect.ValueOf(&d.def).Elem(), id, "", d.badLines)...)
	src, err := yaml.Marshal(n)
	if err != nil {
		return d, append(probs, Problem{Form: id, Line: n.Line, Msg: cleanYAMLError(err)}), false
	}
	d.def.source = src
	return d, probs, true
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
