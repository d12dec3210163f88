package form

import (
	"fmt"
	"math"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/nyaruka/phonenumbers"
)

// Form is a checked, compiled definition, ready to validate submissions.
// It is immutable once compiled and safe for concurrent use.
type Form struct {
	Def    Definition
	fields []compiledField
	byName map[string]int
	unique [][]int // field indexes of each unique set, names sorted
	order  []int   // field indexes sorted by name, for the fingerprint
	// conditional says some field has a show_if.
	conditional bool
}

type compiledField struct {
	Field
	minLen, maxLen   int // text-like: characters; multiselect: number of options
	minNum, maxNum   decimal
	hasMin, hasMax   bool
	minDate, maxDate string
	pattern          *regexp.Regexp
	options          map[string]int // value → position
}

// Compile checks a definition and prepares it for validation. A bad
// definition gives a *DefinitionError naming the form, the field and what
// would be valid. Webhook URLs are checked for their syntax only; see
// CompileChecked.
func Compile(d Definition) (*Form, error) { return CompileChecked(d, nil) }

// CompileChecked is Compile with webhook URLs checked by checkURL (the
// server's guard, which refuses private addresses unless allowed).
func CompileChecked(d Definition, checkURL func(string) error) (*Form, error) {
	c := &compiler{form: d.ID}
	f := &Form{Def: d, byName: map[string]int{}}
	if d.ID == "" {
		c.add("", "id is missing; give the form an id such as spring-fair-2027")
	} else if !idPattern.MatchString(d.ID) {
		c.add("", fmt.Sprintf("id %q is not valid: use 1-64 lower-case letters, digits, '-' or '_', starting with a letter or digit", d.ID))
	}
	if d.Site != "" && !idPattern.MatchString(d.Site) {
		c.add("", fmt.Sprintf("site %q is not valid: use 1-64 lower-case letters, digits, '-' or '_'", d.Site))
	}
	if len(d.Fields) == 0 {
		c.add("", "fields is empty; a form needs at least one field")
	}
	honeypot := ""
	if d.Spam != nil {
		honeypot = d.Spam.Honeypot
	}
	// Names are counted before each field is checked, so that a second
	// field of a name is refused even when the first has problems.
	named := map[string]bool{}
	allNames := map[string]bool{}
	for _, fd := range d.Fields {
		allNames[fd.Name] = true
	}
	earlier := map[string]*Field{}
	for i := range d.Fields {
		if fd := &d.Fields[i]; fd.ShowIf != nil {
			c.checkCondition(fd.Name, fd.ShowIf, earlier, allNames, "show_if")
		}
		if _, seen := earlier[d.Fields[i].Name]; !seen {
			earlier[d.Fields[i].Name] = &d.Fields[i]
		}
	}
	for _, fd := range d.Fields {
		if fd.Name != "" && named[fd.Name] {
			c.add(fd.Name, duplicateField)
			continue
		}
		named[fd.Name] = true
		cf, ok := c.field(fd, honeypot)
		if !ok {
			continue
		}
		f.byName[fd.Name] = len(f.fields)
		f.fields = append(f.fields, cf)
		f.conditional = f.conditional || fd.ShowIf != nil
	}
	for i, set := range d.Unique {
		if len(set) == 0 {
			c.add("", fmt.Sprintf("unique[%d] is empty; list the fields that identify one participant, such as [phone]", i))
			continue
		}
		var idx []int
		names := slices.Clone(set)
		slices.Sort(names)
		for j, n := range names {
			if j > 0 && names[j-1] == n {
				c.add(n, fmt.Sprintf("unique[%d] names this field twice", i))
				continue
			}
			k, ok := f.byName[n]
			if !ok {
				c.add("", fmt.Sprintf("unique[%d] names %q, which is not a field of this form; fields are: %s", i, n, strings.Join(f.fieldNames(), ", ")))
				continue
			}
			idx = append(idx, k)
		}
		f.unique = append(f.unique, idx)
	}
	switch {
	case d.Capacity != nil && *d.Capacity < 0:
		c.add("", fmt.Sprintf("capacity %d is negative; give the number of places, or leave it out for no limit", *d.Capacity))
	}
	c.checkPages(d)
	placeFields := d.placeFields()
	if len(placeFields) > 1 {
		c.add("", fmt.Sprintf("options with a capacity are on %s; only one select field of a form may give its options places of their own", strings.Join(placeFields, " and ")))
	}
	switch d.WhenFull {
	case "", WhenFullReject, WhenFullWaitlist:
		if d.WhenFull != "" && d.Capacity == nil && len(placeFields) == 0 {
			c.add("", "when_full is set but neither the form nor an option has a capacity; give capacity: N (or an option's capacity) or remove when_full")
		}
	default:
		c.add("", fmt.Sprintf("when_full %q is not valid: use waitlist or reject", d.WhenFull))
	}
	switch d.UniqueAnswer {
	case "", UniqueAnswerGeneric, UniqueAnswerDuplicate:
	default:
		c.add("", fmt.Sprintf("unique_answer %q is not valid: use generic (a full form tells a registered participant capacity-reached, as anyone) or duplicate (it tells them duplicate-entry)", d.UniqueAnswer))
	}
	if d.OpensAt != nil && d.ClosesAt != nil && !d.ClosesAt.After(*d.OpensAt) {
		c.add("", fmt.Sprintf("closes_at %s is not after opens_at %s", d.ClosesAt.Format(time.RFC3339), d.OpensAt.Format(time.RFC3339)))
	}
	switch d.UnknownFields {
	case "", UnknownKeep, UnknownReject:
	default:
		c.add("", fmt.Sprintf("unknown_fields %q is not valid: use keep (the default: fields the form does not define are kept under extra) or reject (422)", d.UnknownFields))
	}
	switch d.Durability {
	case "", DurabilitySync, DurabilityAsync:
	default:
		c.add("", fmt.Sprintf("durability %q is not valid: use sync (fsync before the answer, the default) or async", d.Durability))
	}
	if d.Spam != nil {
		if h := d.Spam.Honeypot; h != "" && !namePattern.MatchString(h) {
			c.add("", fmt.Sprintf("spam.honeypot %q is not a valid field name: use letters, digits and '_', starting with a letter", h))
		}
		if m := d.Spam.MinSeconds; m < 0 || m > 3600 || math.IsNaN(m) {
			c.add("", fmt.Sprintf("spam.min_seconds %v is out of range: use 0 to 3600", m))
		}
		c.checkChallenge(d.Spam)
		if d.Spam.NeedsChallenge() {
			for _, fd := range d.Fields {
				if fd.Name == ChallengeField {
					c.add(fd.Name, "has the name of the proof-of-work's field (spam.challenge): rename the field")
				}
			}
		}
	}
	for _, o := range d.Origins {
		if o == "*" {
			continue
		}
		u, err := url.Parse(o)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || (u.Path != "" && u.Path != "/") || u.RawQuery != "" {
			c.add("", fmt.Sprintf("origins: %q is not an origin; write scheme://host[:port] such as https://fair.example.org, or *", o))
		}
	}
	c.checkEditUntil(&d)
	if d.DraftTTL != nil && *d.DraftTTL <= 0 {
		c.add("", "draft_ttl must be positive, such as 30d")
	}
	if d.Retention != nil && *d.Retention <= 0 {
		c.add("", "retention must be positive, such as 365d")
	}
	if r := d.RateLimit; r != nil && !r.Off {
		if r.Requests <= 0 || r.Per <= 0 || r.Burst < 0 {
			c.add("", "rate_limit needs requests > 0 and per > 0 (for example {requests: 60, per: 1m, burst: 20}), or `off`")
		}
	}
	if r := d.Redirect; r != "" {
		u, err := url.Parse(r)
		if err != nil || !(strings.HasPrefix(r, "/") && !strings.HasPrefix(r, "//") || (u.Scheme == "https" || u.Scheme == "http") && u.Host != "") {
			c.add("", fmt.Sprintf("redirect %q is not valid: use an absolute http(s) URL or a path starting with /", r))
		}
	}
	c.checkNotify(d.Notify, f, checkURL)
	if len(c.probs) > 0 {
		return nil, &DefinitionError{Problems: c.probs}
	}
	f.order = make([]int, len(f.fields))
	for i := range f.order {
		f.order[i] = i
	}
	slices.SortFunc(f.order, func(a, b int) int { return strings.Compare(f.fields[a].Name, f.fields[b].Name) })
	if f.Def.Site == "" {
		f.Def.Site = "default"
	}
	if f.Def.UnknownFields == "" {
		f.Def.UnknownFields = UnknownKeep
	}
	if f.Def.Durability == "" {
		f.Def.Durability = DurabilitySync
	}
	if (f.Def.Capacity != nil || len(placeFields) > 0) && f.Def.WhenFull == "" {
		f.Def.WhenFull = WhenFullReject
	}
	if f.Def.UniqueAnswer == "" {
		f.Def.UniqueAnswer = UniqueAnswerGeneric
	}
	return f, nil
}

type compiler struct {
	form  string
	probs []Problem
}

// duplicateField is the problem of a field name declared a second time.
const duplicateField = "declared twice; field names must be unique within a form"

func (c *compiler) add(field, msg string) {
	c.probs = append(c.probs, Problem{Form: c.form, Field: field, Msg: msg})
}

func (c *compiler) field(fd Field, honeypot string) (compiledField, bool) {
	cf := compiledField{Field: fd}
	n := len(c.probs)
	name := fd.Name
	switch {
	case name == "":
		c.add("", fmt.Sprintf("a field has no name (type %q); give each field a name", fd.Type))
		return cf, false
	case strings.HasPrefix(name, "_"):
		c.add(name, "names starting with '_' are reserved for formd (_key, _ts)")
	case !namePattern.MatchString(name):
		c.add(name, "name is not valid: use 1-64 letters, digits and '_', starting with a letter")
	case name == honeypot:
		c.add(name, "has the same name as spam.honeypot; the honeypot must not be a real field")
	}
	if !slices.Contains(fieldTypes, fd.Type) {
		c.add(name, fmt.Sprintf("type %q is not valid; use one of: %s", fd.Type, strings.Join(fieldTypes, ", ")))
		return cf, false
	}
	notFor := func(setting string, set bool, allowed ...string) {
		if set && !slices.Contains(allowed, fd.Type) {
			c.add(name, fmt.Sprintf("%s does not apply to type %s (it applies to %s)", setting, fd.Type, strings.Join(allowed, ", ")))
		}
	}
	notFor("options", len(fd.Options) > 0, TypeSelect, TypeMultiselect)
	notFor("normalize", len(fd.Normalize) > 0, TypeText, TypeTextarea, TypeHidden)
	if err := checkNormalize(fd.Normalize); err != nil {
		c.add(name, err.Error())
	}
	notFor("region", fd.Region != "", TypePhone)
	notFor("integer", fd.Integer, TypeNumber)
	notFor("pattern", fd.Pattern != "", TypeText, TypeTextarea, TypeEmail, TypeHidden)
	notFor("max_length", fd.MaxLength != nil, TypeText, TypeTextarea, TypeEmail, TypeHidden)
	notFor("min", fd.Min != nil, TypeText, TypeTextarea, TypeNumber, TypeMultiselect, TypeDate, TypeHidden)
	notFor("max", fd.Max != nil, TypeText, TypeTextarea, TypeEmail, TypeNumber, TypeMultiselect, TypeDate, TypeHidden)
	if fd.Type == TypeHidden && fd.Required {
		c.add(name, "a hidden field cannot be required: the person never sees it, and a link without its value would make the form impossible to send")
	}
	if fd.Type == TypeHidden && fd.ShowIf != nil {
		c.add(name, "a hidden field is never shown, so show_if does not apply")
	}
	notFor("max_size", fd.MaxSize != nil, TypeFile)
	notFor("max_files", fd.MaxFiles != nil, TypeFile)
	notFor("accept", len(fd.Accept) > 0, TypeFile)
	notFor("max_pixels", fd.MaxPixels != nil, TypeFile)

	switch fd.Type {
	case TypeText, TypeTextarea, TypeEmail, TypeMultiselect, TypeHidden:
		cf.maxLen = DefaultTextMax
		if fd.Type == TypeTextarea {
			cf.maxLen = DefaultTextareaMax
		}
		if fd.Type == TypeEmail {
			cf.maxLen = 254
		}
		if fd.Type == TypeMultiselect {
			cf.maxLen = len(fd.Options)
		}
		if fd.Min != nil {
			cf.minLen, cf.hasMin = c.count(name, "min", fd.Min), true
		}
		if fd.Max != nil {
			cf.maxLen, cf.hasMax = c.count(name, "max", fd.Max), true
		}
		if fd.MaxLength != nil {
			if fd.Max != nil && *fd.MaxLength != cf.maxLen {
				c.add(name, "max and max_length disagree; give one of them")
			}
			if *fd.MaxLength < 1 {
				c.add(name, "max_length must be at least 1")
			}
			cf.maxLen, cf.hasMax = *fd.MaxLength, true
		}
		if cf.hasMin && cf.minLen > cf.maxLen {
			c.add(name, fmt.Sprintf("min %d is greater than max %d", cf.minLen, cf.maxLen))
		}
		if fd.Pattern != "" {
			re, err := regexp.Compile(`^(?:` + fd.Pattern + `)$`)
			if err != nil {
				c.add(name, fmt.Sprintf("pattern %q is not a valid regular expression: %v", fd.Pattern, err))
			}
			cf.pattern = re
		}
	case TypeNumber:
		if fd.Min != nil {
			cf.minNum, cf.hasMin = c.decimal(name, "min", fd.Min), true
		}
		if fd.Max != nil {
			cf.maxNum, cf.hasMax = c.decimal(name, "max", fd.Max), true
		}
		if cf.hasMin && cf.hasMax && cf.minNum.cmp(cf.maxNum) > 0 {
			c.add(name, fmt.Sprintf("min %s is greater than max %s", cf.minNum.canon, cf.maxNum.canon))
		}
	case TypeDate:
		if fd.Min != nil {
			cf.minDate = c.date(name, "min", fd.Min)
		}
		if fd.Max != nil {
			cf.maxDate = c.date(name, "max", fd.Max)
		}
		if cf.minDate != "" && cf.maxDate != "" && cf.minDate > cf.maxDate {
			c.add(name, fmt.Sprintf("min %s is after max %s", cf.minDate, cf.maxDate))
		}
	case TypeFile:
		c.checkFile(name, fd)
	case TypePhone:
		if fd.Region != "" {
			r := strings.ToUpper(fd.Region)
			if _, ok := phonenumbers.GetSupportedRegions()[r]; !ok {
				c.add(name, fmt.Sprintf("region %q is not a known region; use a two-letter ISO 3166 code such as CN, US or ES", fd.Region))
			}
			cf.Region = r
		}
	}
	if fd.Type == TypeSelect || fd.Type == TypeMultiselect {
		if len(fd.Options) == 0 {
			c.add(name, "options is empty; a "+fd.Type+" needs at least one option")
		}
		cf.options = make(map[string]int, len(fd.Options))
		for i, o := range fd.Options {
			k := fold(o.Value)
			if k == "" {
				c.add(name, fmt.Sprintf("options[%d] has an empty value", i))
			}
			if _, dup := cf.options[k]; dup {
				c.add(name, fmt.Sprintf("option %q is listed twice (options are compared as people see them, ignoring width and invisible characters)", o.Value))
			}
			cf.options[k] = i
			if o.Capacity != nil {
				if fd.Type != TypeSelect {
					c.add(name, fmt.Sprintf("option %q has a capacity, but only the options of a select field may have places of their own (this field is a %s)", o.Value, fd.Type))
				} else if *o.Capacity < 0 {
					c.add(name, fmt.Sprintf("option %q has capacity %d; use a number of places, 0 or more", o.Value, *o.Capacity))
				}
			}
		}
	}
	return cf, len(c.probs) == n
}

func (c *compiler) count(field, setting string, b *Bound) int {
	if !b.isNum || b.Num < 0 || b.Num != math.Trunc(b.Num) || b.Num > 1e6 {
		c.add(field, fmt.Sprintf("%s %q must be a whole number from 0 to 1000000", setting, b.raw))
		return 0
	}
	return int(b.Num)
}

// decimal reads a numeric bound exactly, as the values it bounds are read.
func (c *compiler) decimal(field, setting string, b *Bound) decimal {
	d, ok := parseDecimal(strings.TrimSpace(b.raw))
	if !ok {
		c.add(field, fmt.Sprintf("%s %q must be a number written with digits, such as 1, 2.5 or -10", setting, b.raw))
	}
	return d
}

func (c *compiler) date(field, setting string, b *Bound) string {
	if b.Date == "" {
		c.add(field, fmt.Sprintf("%s %q must be a date written YYYY-MM-DD", setting, b.raw))
	}
	return b.Date
}

func (f *Form) fieldNames() []string {
	names := make([]string, len(f.fields))
	for i, cf := range f.fields {
		names[i] = cf.Name
	}
	return names
}

// Source is the definition as YAML (empty for a definition built in code).
func (f *Form) Source() []byte { return f.Def.source }

// ID is the form's id.
func (f *Form) ID() string { return f.Def.ID }

// Field returns the named field's definition.
func (f *Form) Field(name string) (Field, bool) {
	i, ok := f.byName[name]
	if !ok {
		return Field{}, false
	}
	return f.fields[i].Field, true
}

// Fields returns the form's fields in their declared order.
func (f *Form) Fields() []Field {
	out := make([]Field, len(f.fields))
	for i, cf := range f.fields {
		out[i] = cf.Field
	}
	return out
}

// AllowsOrigin says whether a browser page of this origin may submit to
// the form and upload its files (its origins, or *).
func (f *Form) AllowsOrigin(origin string) bool {
	return slices.Contains(f.Def.Origins, origin) || slices.Contains(f.Def.Origins, "*")
}

// OpenAt says whether the form takes submissions at t.
func (f *Form) OpenAt(t time.Time) bool {
	if f.Def.OpensAt != nil && t.Before(*f.Def.OpensAt) {
		return false
	}
	if f.Def.ClosesAt != nil && !t.Before(*f.Def.ClosesAt) {
		return false
	}
	return true
}

// checkEditUntil: edit_until is a time or closes_at, and a time the
// form's answers can be changed in.
func (c *compiler) checkEditUntil(d *Definition) {
	switch d.EditUntil {
	case "":
		return
	case EditUntilClosesAt:
		if d.ClosesAt == nil {
			c.add("", "edit_until is closes_at but the form has no closes_at: set closes_at, or give edit_until a time such as 2030-05-01T18:00:00+08:00")
		}
		return
	}
	t, err := time.Parse(time.RFC3339, d.EditUntil)
	if err != nil {
		c.add("", fmt.Sprintf("edit_until %q is not a time: write a time with its zone such as 2030-05-01T18:00:00+08:00, or closes_at (changes close with the form)", d.EditUntil))
		return
	}
	if d.OpensAt != nil && !t.After(*d.OpensAt) {
		c.add("", fmt.Sprintf("edit_until %s is not after opens_at %s: nobody could change an answer", t.Format(time.RFC3339), d.OpensAt.Format(time.RFC3339)))
	}
}
