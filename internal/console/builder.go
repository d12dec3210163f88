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
	form.TypeMultiselect, form.TypeCheckbox, form.TypeDate, form.TypeFile}

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
	Origins, Retention    string
	// OwnerEmails get each new entry (notify.email.to); ConfirmField is
	// the e-mail field whose address gets a confirmation
	// (notify.email.confirm).
	OwnerEmails, ConfirmField string
	// Webhooks are the webhooks' addresses, shown (their secrets never).
	Webhooks []string
	Fields   []draftField
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
	// Problems are what validation said about this field.
	Problems []string
}

// HasOptions, HasRange, … say which settings a field's type has.
func (f draftField) HasOptions() bool {
	return f.Type == form.TypeSelect || f.Type == form.TypeMultiselect
}

// HasRange says min and max apply: a number's value, a date's, a text's
// length, a multiselect's count.
func (f draftField) HasRange() bool {
	switch f.Type {
	case form.TypeText, form.TypeTextarea, form.TypeNumber, form.TypeDate, form.TypeMultiselect:
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
			var opts []string
			if os := get(fn, "options"); os != nil {
				for _, o := range os.Content {
					if o.Kind == yaml.ScalarNode {
						opts = append(opts, o.Value)
						continue
					}
					en, zh := texts(get(o, "label"), d.Langs)
					line := scalar(o, "value")
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

// ---- the page's form ----

// draftFromForm reads the builder's model from its posted page.
func draftFromForm(v url.Values) draftForm {
	d := draftForm{ID: strings.TrimSpace(v.Get("id")), Site: strings.TrimSpace(v.Get("site")), Langs: v.Get("langs"),
		TitleEN: strings.TrimSpace(v.Get("title_en")), TitleZH: strings.TrimSpace(v.Get("title_zh")),
		DescEN: strings.TrimSpace(v.Get("desc_en")), DescZH: strings.TrimSpace(v.Get("desc_zh")),
		Capacity: strings.TrimSpace(v.Get("capacity")), WhenFull: v.Get("when_full"), OpensAt: v.Get("opens_at"),
		ClosesAt: v.Get("closes_at"), TZ: v.Get("tz"), Challenge: v.Get("challenge") == "on",
		Origins: strings.TrimSpace(v.Get("origins")), Retention: strings.TrimSpace(v.Get("retention")),
		OwnerEmails: strings.TrimSpace(v.Get("owner_emails")), ConfirmField: v.Get("confirm_field")}
	if d.Langs != "en" && d.Langs != "zh" {
		d.Langs = "both"
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
			MaxFiles: strings.TrimSpace(v.Get(p + "max_files")), Options: strings.TrimSpace(v.Get(p + "options"))}
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
			set(fn, "options", d.options(f.Options))
		} else {
			del(fn, "options")
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
	set(m, "capacity", orNil(d.Capacity, plain))
	if d.Capacity == "" {
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

// options reads the options text, one a line: value | English | 中文
// (a line of only a value is its own label).
func (d draftForm) options(text string) *yaml.Node {
	n := &yaml.Node{Kind: yaml.SequenceNode}
	for _, line := range strings.Split(text, "\n") {
		if strings.TrimSpace(line) == "" {
			continue
		}
		parts := strings.Split(line, "|")
		for i := range parts {
			parts[i] = strings.TrimSpace(parts[i])
		}
		for len(parts) < 3 {
			parts = append(parts, "")
		}
		label := d.text(parts[1], parts[2])
		if label == nil {
			n.Content = append(n.Content, str(parts[0]))
			continue
		}
		n.Content = append(n.Content, &yaml.Node{Kind: yaml.MappingNode, Style: yaml.FlowStyle, Content: []*yaml.Node{str("value"), str(parts[0]), str("label"), label}})
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
