package console

import (
	"embed"
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/formd/formd/internal/form"
)

// The form builder (issue 31): an organizer makes and changes a form field
// by field instead of writing YAML. The builder's model (draftForm) is
// read from a definition's YAML and written back into the same YAML tree,
// so what the builder does not show (webhooks, e-mails, rate limits, a
// field's pattern…) stays as the definition had it. What it writes is
// published through the admin API's one path (validation, change summary,
// confirmation, version, audit log).

//go:embed formtemplates/*.yaml
var templateFiles embed.FS

// formTemplates are the starting points of "New form", in the order the
// page lists them.
var formTemplates = []string{"blank", "event", "exam", "booking", "volunteer", "contact"}

// templateSource is a template's YAML (no id, site or title of its own
// organizer yet).
func templateSource(name string) ([]byte, bool) {
	if !slices.Contains(formTemplates, name) {
		return nil, false
	}
	b, err := templateFiles.ReadFile("formtemplates/" + name + ".yaml")
	return b, err == nil
}

// builderTypes are the field types the editor offers (form's own list).
var builderTypes = []string{form.TypeText, form.TypeTextarea, form.TypeEmail, form.TypePhone, form.TypeNumber, form.TypeSelect,
	form.TypeMultiselect, form.TypeCheckbox, form.TypeDate, form.TypeFile, form.TypeHidden}

// draftForm is what the builder edits.
type draftForm struct {
	ID, Site string
	// Langs is en, zh or both: which texts the form has.
	Langs              string
	TitleEN, TitleZH   string
	DescEN, DescZH     string
	Capacity, WhenFull string
	// OpensAt and ClosesAt are local times (datetime-local) in TZ.
	OpensAt, ClosesAt, TZ string
	Challenge             bool
	// Review decides new entries as pending until an editor approves
	// or declines each (review: true).
	Review             bool
	Origins, Retention string
	// OwnerEmails get each new entry (notify.email.to); ConfirmField is
	// the e-mail field whose address gets a confirmation
	// (notify.email.confirm).
	OwnerEmails, ConfirmField string
	// Webhooks are the webhooks' addresses, shown (their secrets never).
	Webhooks []string
	Fields   []draftField
	// Pages are the form's steps, in order; each field names its step
	// (draftField.Page). None: the form is one page.
	Pages []draftPage
}

// draftPage is one step of a form in the builder: its titles.
type draftPage struct {
	TitleEN, TitleZH string
}

// EmailFields are the names of the form's e-mail fields, for the
// confirmation's choice.
func (d draftForm) EmailFields() []string {
	var out []string
	for _, f := range d.Fields {
		if f.Type == form.TypeEmail {
			out = append(out, f.Name)
		}
	}
	return out
}

// draftField is one field in the builder.
type draftField struct {
	// Orig is the field's name in the definition it was read from: its
	// other keys stay; "" for a field added in the builder.
	Orig, Name, Type string
	LabelEN, LabelZH string
	HelpEN, HelpZH   string
	Required, Unique bool
	Min, Max         string
	Region           string
	MaxSize, Accept  string
	MaxFiles         string
	// Options are one a line: value | English | 中文.
	Options string
	// Places are the places of a select field's options, by value ("" or
	// absent for none): an option's capacity.
	Places map[string]string
	// Prefill lets the hosted page's link fill the field in (prefill).
	Prefill bool
	// Page is the field's step, from 1 ("" when the form has no steps).
	Page string
	// ShowField, ShowOp and ShowValue are a show_if of one test: the
	// earlier field, equals / in / not / answered / unanswered, and the
	// value (values separated by commas for in). ShowKept is a show_if
	// that combines tests (all, any): the builder shows it and keeps it
	// as written.
	ShowField, ShowOp, ShowValue string
	ShowKept                     string
	// Problems are what validation said about this field.
	Problems []string
}

// HasOptions, HasRange, … say which settings a field's type has.
func (f draftField) HasOptions() bool {
	return f.Type == form.TypeSelect || f.Type == form.TypeMultiselect
}

// HasPlaces says the field's options may have places of their own (only a
// select's may).
func (f draftField) HasPlaces() bool { return f.Type == form.TypeSelect }

// IsHidden says the field is never shown: no question to require, no
// condition, no step.
func (f draftField) IsHidden() bool { return f.Type == form.TypeHidden }

// CanPrefill says the link may fill the field in (a file cannot be; a
// hidden field always takes its value from the link).
func (f draftField) CanPrefill() bool { return f.Type != form.TypeFile && f.Type != form.TypeHidden }

// draftOption is one option as the places editor lists it.
type draftOption struct {
	Value, Label, Places string
}

// OptionList is the field's options with their places, for the places
// editor: the label in the page's language where it has one.
func (f draftField) OptionList(zh bool) []draftOption {
	var out []draftOption
	for _, line := range strings.Split(f.Options, "\n") {
		parts := optionParts(line)
		if parts == nil {
			continue
		}
		label := parts[1]
		if (zh && parts[2] != "") || label == "" {
			label = parts[2]
		}
		if label == "" {
			label = parts[0]
		}
		out = append(out, draftOption{Value: parts[0], Label: label, Places: f.Places[parts[0]]})
	}
	return out
}

// optionParts splits one line of the options text into value, English
// and Chinese; nil for an empty line.
func optionParts(line string) []string {
	if strings.TrimSpace(line) == "" {
		return nil
	}
	parts := strings.Split(line, "|")
	for i := range parts {
		parts[i] = strings.TrimSpace(parts[i])
	}
	for len(parts) < 3 {
		parts = append(parts, "")
	}
	return parts
}

// HasRange says min and max apply: a number's value, a date's, a text's
// length, a multiselect's count.
func (f draftField) HasRange() bool {
	switch f.Type {
	case form.TypeText, form.TypeTextarea, form.TypeNumber, form.TypeDate, form.TypeMultiselect, form.TypeHidden:
		return true
	}
	return false
}

// IsFile and IsPhone say the type's own settings apply.
func (f draftField) IsFile() bool  { return f.Type == form.TypeFile }
func (f draftField) IsPhone() bool { return f.Type == form.TypePhone }

// EN and ZH say which language's texts the form has.
func (d draftForm) EN() bool { return d.Langs != "zh" }
func (d draftForm) ZH() bool { return d.Langs != "en" }

// ---- reading YAML ----

func mapping(n *yaml.Node) *yaml.Node {
	if n != nil && n.Kind == yaml.DocumentNode && len(n.Content) == 1 {
		n = n.Content[0]
	}
	if n == nil || n.Kind != yaml.MappingNode {
		return nil
	}
	return n
}

func get(m *yaml.Node, key string) *yaml.Node {
	if m == nil {
		return nil
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i+1]
		}
	}
	return nil
}

func scalar(m *yaml.Node, key string) string {
	if n := get(m, key); n != nil && n.Kind == yaml.ScalarNode {
		return n.Value
	}
	return ""
}

// texts reads a Text node as its English and Chinese strings: a plain
// string is the form's one language.
func texts(n *yaml.Node, langs string) (en, zh string) {
	switch {
	case n == nil:
	case n.Kind == yaml.ScalarNode:
		if langs == "zh" {
			return "", n.Value
		}
		return n.Value, ""
	case n.Kind == yaml.MappingNode:
		en, zh = scalar(n, "en"), scalar(n, "zh")
		if en == "" {
			en = scalar(n, "")
		}
	}
	return en, zh
}

func seqScalars(n *yaml.Node) []string {
	if n == nil {
		return nil
	}
	if n.Kind == yaml.ScalarNode {
		return []string{n.Value}
	}
	var out []string
	for _, c := range n.Content {
		if c.Kind == yaml.ScalarNode {
			out = append(out, c.Value)
		}
	}
	return out
}

// langsOf guesses a definition's languages from its title and labels.
func langsOf(m *yaml.Node) string {
	en, zh := false, false
	look := func(n *yaml.Node) {
		if n == nil {
			return
		}
		if n.Kind == yaml.ScalarNode {
			if hasHan(n.Value) {
				zh = true
			} else {
				en = true
			}
			return
		}
		en = en || get(n, "en") != nil || get(n, "") != nil
		zh = zh || get(n, "zh") != nil
	}
	look(get(m, "title"))
	if fs := get(m, "fields"); fs != nil {
		for _, f := range fs.Content {
			look(get(f, "label"))
		}
	}
	switch {
	case en && zh:
		return "both"
	case zh:
		return "zh"
	}
	return "en"
}

var han = regexp.MustCompile(`\p{Han}`)

func hasHan(s string) bool { return han.MatchString(s) }

// readDraft reads the builder's model from a definition's YAML; tz is the
// organizer's time zone for opening and closing times.
func readDraft(src []byte, tz *time.Location) (draftForm, *yaml.Node, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(src, &doc); err != nil {
		return draftForm{}, nil, fmt.Errorf("read the definition: %w", err)
	}
	m := mapping(&doc)
	if m == nil {
		return draftForm{}, nil, fmt.Errorf("read the definition: it is not one YAML mapping")
	}
	d := draftForm{ID: scalar(m, "id"), Site: scalar(m, "site"), Langs: langsOf(m), Capacity: scalar(m, "capacity"),
		WhenFull: scalar(m, "when_full"), TZ: tz.String(), Retention: scalar(m, "retention")}
	d.TitleEN, d.TitleZH = texts(get(m, "title"), d.Langs)
	d.DescEN, d.DescZH = texts(get(m, "description"), d.Langs)
	d.Origins = strings.Join(seqScalars(get(m, "origins")), "\n")
	d.Challenge = scalar(get(m, "spam"), "challenge") == "pow"
	d.Review = scalar(m, "review") == "true"
	pageOf := map[string]string{}
	if ps := get(m, "pages"); ps != nil {
		for i, pn := range ps.Content {
			var p draftPage
			p.TitleEN, p.TitleZH = texts(get(pn, "title"), d.Langs)
			d.Pages = append(d.Pages, p)
			for _, name := range seqScalars(get(pn, "fields")) {
				pageOf[name] = strconv.Itoa(i + 1)
			}
		}
	}
	if email := get(get(m, "notify"), "email"); email != nil {
		d.OwnerEmails = strings.Join(seqScalars(get(email, "to")), "\n")
		d.ConfirmField = scalar(email, "confirm")
	}
	if hooks := get(get(m, "notify"), "webhooks"); hooks != nil {
		for _, w := range hooks.Content {
			d.Webhooks = append(d.Webhooks, scalar(w, "url"))
		}
	}
	for key, dst := range map[string]*string{"opens_at": &d.OpensAt, "closes_at": &d.ClosesAt} {
		if v := scalar(m, key); v != "" {
			if t, err := time.Parse(time.RFC3339, v); err == nil {
				*dst = t.In(tz).Format("2006-01-02T15:04")
			}
		}
	}
	var unique []string
	if u := get(m, "unique"); u != nil {
		for _, set := range u.Content {
			if s := seqScalars(set); len(s) == 1 {
				unique = append(unique, s[0])
			}
		}
	}
	if fs := get(m, "fields"); fs != nil {
		for _, fn := range fs.Content {
			f := draftField{Orig: scalar(fn, "name"), Name: scalar(fn, "name"), Type: scalar(fn, "type"), Required: scalar(fn, "required") == "true",
				Min: scalar(fn, "min"), Max: scalar(fn, "max"), Region: scalar(fn, "region"), MaxSize: scalar(fn, "max_size"),
				MaxFiles: scalar(fn, "max_files"), Accept: strings.Join(seqScalars(get(fn, "accept")), ", ")}
			if f.Max == "" {
				f.Max = scalar(fn, "max_length")
			}
			f.LabelEN, f.LabelZH = texts(get(fn, "label"), d.Langs)
			f.HelpEN, f.HelpZH = texts(get(fn, "help"), d.Langs)
			f.Unique = slices.Contains(unique, f.Name)
			f.Prefill = scalar(fn, "prefill") == "true"
			f.Page = pageOf[f.Name]
			f.ShowField, f.ShowOp, f.ShowValue, f.ShowKept = readShow(get(fn, "show_if"))
			var opts []string
			if os := get(fn, "options"); os != nil {
				for _, o := range os.Content {
					if o.Kind == yaml.ScalarNode {
						opts = append(opts, o.Value)
						continue
					}
					en, zh := texts(get(o, "label"), d.Langs)
					line := scalar(o, "value")
					if c := scalar(o, "capacity"); c != "" {
						if f.Places == nil {
							f.Places = map[string]string{}
						}
						f.Places[line] = c
					}
					if en != "" || zh != "" {
						line += " | " + en
					}
					if zh != "" {
						line += " | " + zh
					}
					opts = append(opts, line)
				}
			}
			f.Options = strings.Join(opts, "\n")
			d.Fields = append(d.Fields, f)
		}
	}
	return d, &doc, nil
}

// readShow reads a show_if of one test into the builder's three
// choices; one that combines tests (all, any) comes back as its YAML, kept.
func readShow(n *yaml.Node) (field, op, value, kept string) {
	if n == nil {
		return "", "", "", ""
	}
	if get(n, "all") != nil || get(n, "any") != nil || n.Kind != yaml.MappingNode {
		out, _ := yaml.Marshal(n)
		return "", "", "", strings.TrimSpace(string(out))
	}
	field = scalar(n, "field")
	switch {
	case get(n, "equals") != nil:
		return field, "equals", scalar(n, "equals"), ""
	case get(n, "in") != nil:
		return field, "in", strings.Join(seqScalars(get(n, "in")), ", "), ""
	case get(n, "not") != nil:
		return field, "not", scalar(n, "not"), ""
	case scalar(n, "answered") == "false":
		return field, "unanswered", "", ""
	}
	return field, "answered", "", ""
}

// showNode writes the builder's one-test condition as a show_if; nil for
// none.
func (f draftField) showNode() *yaml.Node {
	if f.ShowField == "" || f.IsHidden() {
		return nil
	}
	n := &yaml.Node{Kind: yaml.MappingNode, Style: yaml.FlowStyle, Content: []*yaml.Node{str("field"), str(f.ShowField)}}
	switch f.ShowOp {
	case "in":
		in := seq(splitList(f.ShowValue))
		if in == nil {
			in = &yaml.Node{Kind: yaml.SequenceNode, Style: yaml.FlowStyle}
		}
		n.Content = append(n.Content, str("in"), in)
	case "not":
		n.Content = append(n.Content, str("not"), str(f.ShowValue))
	case "answered":
		n.Content = append(n.Content, str("answered"), plain("true"))
	case "unanswered":
		n.Content = append(n.Content, str("answered"), plain("false"))
	default:
		n.Content = append(n.Content, str("equals"), str(f.ShowValue))
	}
	return n
}

// ShowOps are the tests the condition editor offers.
var showOps = []string{"equals", "in", "not", "answered", "unanswered"}

// ShowOps is showOps, for the page.
func (f draftField) ShowOps() []string { return showOps }

// Earlier are the names of the fields before field i that a condition
// may test (a condition names only earlier fields).
func (d draftForm) Earlier(i int) []draftField {
	var out []draftField
	for _, f := range d.Fields[:min(i, len(d.Fields))] {
		if f.Name != "" {
			out = append(out, f)
		}
	}
	return out
}

// PageChoices are the step numbers a field may be on, from 1.
func (d draftForm) PageChoices() []string {
	out := make([]string, len(d.Pages))
	for i := range d.Pages {
		out[i] = strconv.Itoa(i + 1)
	}
	return out
}

// ---- the page's form ----

// draftFromForm reads the builder's model from its posted page.
func draftFromForm(v url.Values) draftForm {
	d := draftForm{ID: strings.TrimSpace(v.Get("id")), Site: strings.TrimSpace(v.Get("site")), Langs: v.Get("langs"),
		TitleEN: strings.TrimSpace(v.Get("title_en")), TitleZH: strings.TrimSpace(v.Get("title_zh")),
		DescEN: strings.TrimSpace(v.Get("desc_en")), DescZH: strings.TrimSpace(v.Get("desc_zh")),
		Capacity: strings.TrimSpace(v.Get("capacity")), WhenFull: v.Get("when_full"), OpensAt: v.Get("opens_at"),
		ClosesAt: v.Get("closes_at"), TZ: v.Get("tz"), Challenge: v.Get("challenge") == "on", Review: v.Get("review") == "on",
		Origins: strings.TrimSpace(v.Get("origins")), Retention: strings.TrimSpace(v.Get("retention")),
		OwnerEmails: strings.TrimSpace(v.Get("owner_emails")), ConfirmField: v.Get("confirm_field")}
	if d.Langs != "en" && d.Langs != "zh" {
		d.Langs = "both"
	}
	np, _ := strconv.Atoi(v.Get("pages"))
	for i := range min(np, 50) {
		p := "p" + strconv.Itoa(i) + "."
		d.Pages = append(d.Pages, draftPage{TitleEN: strings.TrimSpace(v.Get(p + "title_en")), TitleZH: strings.TrimSpace(v.Get(p + "title_zh"))})
	}
	n, _ := strconv.Atoi(v.Get("fields"))
	for i := range min(n, 200) {
		p := "f" + strconv.Itoa(i) + "."
		f := draftField{Orig: v.Get(p + "orig"), Name: strings.TrimSpace(v.Get(p + "name")), Type: v.Get(p + "type"),
			LabelEN: strings.TrimSpace(v.Get(p + "label_en")), LabelZH: strings.TrimSpace(v.Get(p + "label_zh")),
			HelpEN: strings.TrimSpace(v.Get(p + "help_en")), HelpZH: strings.TrimSpace(v.Get(p + "help_zh")),
			Required: v.Get(p+"required") == "on", Unique: v.Get(p+"unique") == "on",
			Min: strings.TrimSpace(v.Get(p + "min")), Max: strings.TrimSpace(v.Get(p + "max")), Region: strings.TrimSpace(v.Get(p + "region")),
			MaxSize: strings.TrimSpace(v.Get(p + "max_size")), Accept: strings.TrimSpace(v.Get(p + "accept")),
			MaxFiles: strings.TrimSpace(v.Get(p + "max_files")), Options: strings.TrimSpace(v.Get(p + "options")),
			Prefill: v.Get(p+"prefill") == "on", Page: v.Get(p + "page"), ShowField: v.Get(p + "show_field"),
			ShowOp: v.Get(p + "show_op"), ShowValue: strings.TrimSpace(v.Get(p + "show_value")), ShowKept: v.Get(p + "show_kept")}
		for j := range 200 {
			js := strconv.Itoa(j)
			if !v.Has(p + "placesv." + js) {
				break
			}
			if f.Places == nil {
				f.Places = map[string]string{}
			}
			f.Places[v.Get(p+"placesv."+js)] = strings.TrimSpace(v.Get(p + "places." + js))
		}
		d.Fields = append(d.Fields, f)
	}
	return d
}

// apply does one of the editor's buttons: add a field of a type, move a
// field up or down, remove it. It says where the focus goes next (the
// field's index, -1 for none).
func (d *draftForm) apply(op, addType string) int {
	verb, arg, _ := strings.Cut(op, ":")
	i, err := strconv.Atoi(arg)
	switch verb {
	case "addpage":
		d.Pages = append(d.Pages, draftPage{})
		if len(d.Pages) == 1 {
			// The form's first step holds every field people see.
			for j := range d.Fields {
				if !d.Fields[j].IsHidden() {
					d.Fields[j].Page = "1"
				}
			}
		}
		return -1
	case "removepage":
		if err == nil && i >= 0 && i < len(d.Pages) {
			d.removePage(i)
		}
		return -1
	}
	if verb != "add" && (err != nil || i < 0 || i >= len(d.Fields)) {
		return -1
	}
	switch verb {
	case "add":
		if !slices.Contains(builderTypes, addType) {
			addType = form.TypeText
		}
		d.Fields = append(d.Fields, draftField{Type: addType, Name: d.freeName(addType)})
		return len(d.Fields) - 1
	case "up":
		if i > 0 {
			d.Fields[i-1], d.Fields[i] = d.Fields[i], d.Fields[i-1]
			return i - 1
		}
		return i
	case "down":
		if i+1 < len(d.Fields) {
			d.Fields[i+1], d.Fields[i] = d.Fields[i], d.Fields[i+1]
			return i + 1
		}
		return i
	case "remove":
		d.Fields = slices.Delete(d.Fields, i, i+1)
		return min(i, len(d.Fields)-1)
	}
	return -1
}

// removePage takes step i out: its fields go to the step before it (the
// next one for the first), and no step at all when it was the last.
func (d *draftForm) removePage(i int) {
	d.Pages = slices.Delete(d.Pages, i, i+1)
	for j := range d.Fields {
		n, err := strconv.Atoi(d.Fields[j].Page)
		switch {
		case len(d.Pages) == 0 || err != nil:
			d.Fields[j].Page = ""
		case n > i+1 || (n == i+1 && n > 1):
			d.Fields[j].Page = strconv.Itoa(n - 1)
		}
	}
}

// freeName is a field name no field has: the type, then type_2, …
func (d draftForm) freeName(base string) string {
	taken := func(n string) bool {
		return slices.ContainsFunc(d.Fields, func(f draftField) bool { return f.Name == n })
	}
	if !taken(base) {
		return base
	}
	for i := 2; ; i++ {
		if n := base + "_" + strconv.Itoa(i); !taken(n) {
			return n
		}
	}
}

// ---- writing YAML ----

// text is a Text node in the form's languages: a plain string for one.
func (d draftForm) text(en, zh string) *yaml.Node {
	switch {
	case d.Langs == "en" || (zh == "" && d.Langs != "zh"):
		if en == "" {
			return nil
		}
		return str(en)
	case d.Langs == "zh" || en == "":
		if zh == "" {
			return nil
		}
		return str(zh)
	}
	return &yaml.Node{Kind: yaml.MappingNode, Style: yaml.FlowStyle, Content: []*yaml.Node{str("en"), str(en), str("zh"), str(zh)}}
}

// str is a string scalar: quoted when YAML would read it as another type
// (a label "123" stays text).
func str(s string) *yaml.Node { return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: s} }

// plain is a scalar as typed, which YAML reads as a number, a date or a
// boolean where it is one: the limits the definition checks.
func plain(s string) *yaml.Node { return &yaml.Node{Kind: yaml.ScalarNode, Value: s} }

func set(m *yaml.Node, key string, v *yaml.Node) {
	if v == nil {
		del(m, key)
		return
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			m.Content[i+1] = v
			return
		}
	}
	m.Content = append(m.Content, str(key), v)
}

func del(m *yaml.Node, key string) {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			m.Content = append(m.Content[:i], m.Content[i+2:]...)
			return
		}
	}
}

func orNil(s string, mk func(string) *yaml.Node) *yaml.Node {
	if s == "" {
		return nil
	}
	return mk(s)
}

func seq(items []string) *yaml.Node {
	if len(items) == 0 {
		return nil
	}
	n := &yaml.Node{Kind: yaml.SequenceNode, Style: yaml.FlowStyle}
	for _, it := range items {
		n.Content = append(n.Content, str(it))
	}
	return n
}

func splitList(s string) []string {
	var out []string
	for _, p := range strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == '\n' || r == '，' }) {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// yaml writes the model into base (the definition it was read from, nil
// for none): the keys the builder shows are set or removed, every other
// key stays.
func (d draftForm) yaml(base *yaml.Node, tz *time.Location) ([]byte, error) {
	m := mapping(base)
	if m == nil {
		m = &yaml.Node{Kind: yaml.MappingNode}
	}
	var oldFields []*yaml.Node
	if fs := get(m, "fields"); fs != nil {
		oldFields = fs.Content
	}
	set(m, "id", str(d.ID))
	set(m, "site", orNil(d.Site, str))
	set(m, "title", d.text(d.TitleEN, d.TitleZH))
	set(m, "description", d.text(d.DescEN, d.DescZH))
	fields := &yaml.Node{Kind: yaml.SequenceNode}
	var unique []string
	for _, f := range d.Fields {
		fn := &yaml.Node{Kind: yaml.MappingNode, Style: yaml.FlowStyle}
		for _, old := range oldFields {
			if f.Orig != "" && scalar(old, "name") == f.Orig {
				fn = old
				break
			}
		}
		set(fn, "name", str(f.Name))
		set(fn, "type", str(f.Type))
		set(fn, "label", d.text(f.LabelEN, f.LabelZH))
		set(fn, "help", d.text(f.HelpEN, f.HelpZH))
		if f.Required {
			set(fn, "required", plain("true"))
		} else {
			del(fn, "required")
		}
		del(fn, "max_length")
		if f.HasRange() {
			set(fn, "min", orNil(f.Min, plain))
			set(fn, "max", orNil(f.Max, plain))
		} else {
			del(fn, "min")
			del(fn, "max")
		}
		if f.IsPhone() {
			set(fn, "region", orNil(strings.ToUpper(f.Region), str))
		} else {
			del(fn, "region")
		}
		if f.IsFile() {
			set(fn, "max_size", orNil(f.MaxSize, str))
			set(fn, "max_files", orNil(f.MaxFiles, plain))
			set(fn, "accept", seq(splitList(f.Accept)))
		} else {
			for _, k := range []string{"max_size", "max_files", "accept"} {
				del(fn, k)
			}
		}
		if f.HasOptions() {
			set(fn, "options", d.options(f))
		} else {
			del(fn, "options")
		}
		if f.Prefill && f.CanPrefill() {
			set(fn, "prefill", plain("true"))
		} else {
			del(fn, "prefill")
		}
		if f.ShowKept == "" || f.IsHidden() {
			if was := get(fn, "show_if"); was == nil || !sameShow(was, f) {
				set(fn, "show_if", f.showNode())
			}
		}
		if f.Unique {
			unique = append(unique, f.Name)
		}
		fields.Content = append(fields.Content, fn)
	}
	set(m, "fields", fields)
	// Unique sets of one field are the builder's; sets of several stay,
	// and the order they were written in.
	u := &yaml.Node{Kind: yaml.SequenceNode, Style: yaml.FlowStyle}
	if old := get(m, "unique"); old != nil {
		for _, s := range old.Content {
			names := seqScalars(s)
			if len(names) > 1 || (len(names) == 1 && slices.Contains(unique, names[0])) {
				u.Content = append(u.Content, s)
				if len(names) == 1 {
					unique = slices.DeleteFunc(unique, func(n string) bool { return n == names[0] })
				}
			}
		}
	}
	for _, name := range unique {
		u.Content = append(u.Content, seq([]string{name}))
	}
	if len(u.Content) == 0 {
		u = nil
	}
	set(m, "unique", u)
	d.writePages(m)
	set(m, "capacity", orNil(d.Capacity, plain))
	if d.Capacity == "" && !d.optionPlaces() {
		del(m, "when_full")
	} else {
		set(m, "when_full", orNil(d.WhenFull, str))
	}
	for key, v := range map[string]string{"opens_at": d.OpensAt, "closes_at": d.ClosesAt} {
		if v == "" {
			del(m, key)
			continue
		}
		t, err := time.ParseInLocation("2006-01-02T15:04", v, tz)
		if err != nil {
			return nil, fmt.Errorf("%s: %q is not a date and time", key, v)
		}
		if was, err := time.Parse(time.RFC3339, scalar(m, key)); err == nil && was.Truncate(time.Minute).Equal(t) {
			continue // the same minute: as it was written
		}
		set(m, key, str(t.In(tz).Format(time.RFC3339)))
	}
	set(m, "origins", seq(splitList(d.Origins)))
	set(m, "retention", orNil(d.Retention, str))
	if d.Review {
		set(m, "review", plain("true"))
	} else {
		del(m, "review")
	}
	d.writeEmail(m)
	spam := get(m, "spam")
	if spam == nil && d.Challenge {
		spam = &yaml.Node{Kind: yaml.MappingNode, Style: yaml.FlowStyle}
		set(m, "spam", spam)
	}
	if spam != nil {
		if d.Challenge {
			set(spam, "challenge", str("pow"))
		} else {
			for _, k := range []string{"challenge", "difficulty", "challenge_fallback"} {
				del(spam, k)
			}
		}
	}
	doc := &yaml.Node{Kind: yaml.DocumentNode, Content: []*yaml.Node{m}}
	out, err := yaml.Marshal(doc)
	if err != nil {
		return nil, fmt.Errorf("write the definition: %w", err)
	}
	return out, nil
}

// writeEmail sets notify.email's to and confirm, keeping its other keys,
// and removes the e-mail when neither is left.
func (d draftForm) writeEmail(m *yaml.Node) {
	to := splitList(d.OwnerEmails)
	notify := get(m, "notify")
	email := get(notify, "email")
	if len(to) == 0 && d.ConfirmField == "" && email == nil {
		return
	}
	if notify == nil {
		notify = &yaml.Node{Kind: yaml.MappingNode}
		set(m, "notify", notify)
	}
	if email == nil {
		email = &yaml.Node{Kind: yaml.MappingNode, Style: yaml.FlowStyle}
		set(notify, "email", email)
	}
	set(email, "to", seq(to))
	set(email, "confirm", orNil(d.ConfirmField, str))
	if len(to) == 0 && d.ConfirmField == "" {
		// No one to write to: the e-mail goes (its language and digest
		// with it; a definition may not keep them alone).
		del(notify, "email")
	}
	if len(notify.Content) == 0 {
		del(m, "notify")
	}
}

// sameShow says a written show_if reads as the builder's condition, so
// it stays as it was written.
func sameShow(was *yaml.Node, f draftField) bool {
	field, op, value, kept := readShow(was)
	return kept == "" && field == f.ShowField && op == f.ShowOp && (value == f.ShowValue || op == "answered" || op == "unanswered")
}

// optionPlaces says an option of some select field has places.
func (d draftForm) optionPlaces() bool {
	for _, f := range d.Fields {
		if f.HasPlaces() {
			for _, p := range f.Places {
				if p != "" {
					return true
				}
			}
		}
	}
	return false
}

// writePages sets the form's pages from the steps and each field's step:
// a step's fields in the form's order, unless the step names the same
// fields as before, whose order stays as written.
func (d draftForm) writePages(m *yaml.Node) {
	if len(d.Pages) == 0 {
		del(m, "pages")
		return
	}
	var old []*yaml.Node
	if ps := get(m, "pages"); ps != nil {
		old = ps.Content
	}
	out := &yaml.Node{Kind: yaml.SequenceNode}
	for i, p := range d.Pages {
		var names []string
		for _, f := range d.Fields {
			if f.Page == strconv.Itoa(i+1) && !f.IsHidden() {
				names = append(names, f.Name)
			}
		}
		pn := &yaml.Node{Kind: yaml.MappingNode}
		if i < len(old) && old[i].Kind == yaml.MappingNode {
			pn = old[i]
			was := seqScalars(get(pn, "fields"))
			if len(was) == len(names) && !slices.ContainsFunc(was, func(n string) bool { return !slices.Contains(names, n) }) {
				names = was
			}
		}
		set(pn, "title", d.text(p.TitleEN, p.TitleZH))
		fs := seq(names)
		if fs == nil {
			fs = &yaml.Node{Kind: yaml.SequenceNode, Style: yaml.FlowStyle}
		}
		set(pn, "fields", fs)
		out.Content = append(out.Content, pn)
	}
	set(m, "pages", out)
}

// options reads a field's options text, one a line: value | English |
// 中文 (a line of only a value is its own label), with each option's
// places.
func (d draftForm) options(f draftField) *yaml.Node {
	n := &yaml.Node{Kind: yaml.SequenceNode}
	for _, line := range strings.Split(f.Options, "\n") {
		parts := optionParts(line)
		if parts == nil {
			continue
		}
		label := d.text(parts[1], parts[2])
		places := ""
		if f.HasPlaces() {
			places = f.Places[parts[0]]
		}
		if label == nil && places == "" {
			n.Content = append(n.Content, str(parts[0]))
			continue
		}
		o := &yaml.Node{Kind: yaml.MappingNode, Style: yaml.FlowStyle, Content: []*yaml.Node{str("value"), str(parts[0])}}
		if label != nil {
			o.Content = append(o.Content, str("label"), label)
		}
		if places != "" {
			o.Content = append(o.Content, str("capacity"), plain(places))
		}
		n.Content = append(n.Content, o)
	}
	if len(n.Content) == 0 {
		return nil
	}
	return n
}

// suggestID makes a form id from a title: lowercase letters, digits and
// dashes; a title of no Latin letters (a Chinese one) gives "form".
func suggestID(title string) string {
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(title) {
		switch {
		case r >= 'a' && r <= 'z' || r >= '0' && r <= '9':
			b.WriteRune(r)
			dash = false
		case b.Len() > 0 && !dash:
			b.WriteByte('-')
			dash = true
		}
	}
	id := strings.Trim(b.String(), "-")
	if len(id) > 48 {
		id = strings.Trim(id[:48], "-")
	}
	if id == "" {
		return "form"
	}
	return id
}
