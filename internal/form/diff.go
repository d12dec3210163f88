package form

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Change is what applying a definition changes about a form, for the
// owner to read before it takes effect (formd forms apply, the console's
// editor): which fields come and go, and the settings that decide who
// gets a place and who hears of it.
type Change struct {
	Form string
	// New says no form of this id exists yet.
	New bool
	// Added and Removed are field names; Retyped the fields whose type
	// changes, as "name: old → new".
	Added, Removed, Retyped []string
	Settings                []SettingChange
}

// SettingChange is one setting's value before and after, as text.
type SettingChange struct {
	Setting, Old, New string
}

// Empty says the definition changes none of what a Change lists.
func (c Change) Empty() bool {
	return !c.New && len(c.Added) == 0 && len(c.Removed) == 0 && len(c.Retyped) == 0 && len(c.Settings) == 0
}

// Changed says the setting is among the changes.
func (c Change) Changed(setting string) bool {
	return slices.ContainsFunc(c.Settings, func(s SettingChange) bool { return s.Setting == setting })
}

// Lines are the change in words, one line each.
func (c Change) Lines() []string {
	if c.New {
		return []string{"new form"}
	}
	var out []string
	if len(c.Added) > 0 {
		out = append(out, "fields added: "+strings.Join(c.Added, ", "))
	}
	if len(c.Removed) > 0 {
		out = append(out, "fields removed: "+strings.Join(c.Removed, ", "))
	}
	for _, r := range c.Retyped {
		out = append(out, "field type changed: "+r)
	}
	for _, s := range c.Settings {
		out = append(out, fmt.Sprintf("%s: %s → %s", s.Setting, s.Old, s.New))
	}
	if len(out) == 0 {
		out = append(out, "no change to fields, capacity, unique, notify, site, waitlist, review or spam")
	}
	return out
}

// Compare is what replacing old (nil: no form yet) with next changes.
func Compare(old, next *Form) Change {
	c := Change{Form: next.ID()}
	if old == nil {
		c.New = true
		return c
	}
	for _, fd := range next.Fields() {
		of, ok := old.Field(fd.Name)
		switch {
		case !ok:
			c.Added = append(c.Added, fd.Name)
		case of.Type != fd.Type:
			c.Retyped = append(c.Retyped, fmt.Sprintf("%s: %s → %s", fd.Name, of.Type, fd.Type))
		}
	}
	for _, fd := range old.Fields() {
		if _, ok := next.Field(fd.Name); !ok {
			c.Removed = append(c.Removed, fd.Name)
		}
	}
	o, n := old.Def, next.Def
	for _, s := range []SettingChange{
		{"site", orNone(o.Site), orNone(n.Site)},
		// An option's places count as the form's: the same confirmation.
		{"capacity", capacityText(o.Capacity) + placesText(old), capacityText(n.Capacity) + placesText(next)},
		{"when_full", whenFullText(o), whenFullText(n)},
		{"review", strconv.FormatBool(o.Review), strconv.FormatBool(n.Review)},
		{"unique", uniqueText(o.Unique), uniqueText(n.Unique)},
		{"notify", jsonText(o.Notify), jsonText(n.Notify)},
		{"spam", jsonText(o.Spam), jsonText(n.Spam)},
	} {
		if s.Old != s.New {
			c.Settings = append(c.Settings, s)
		}
	}
	return c
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

func capacityText(c *int) string {
	if c == nil {
		return "no limit"
	}
	return strconv.Itoa(*c)
}

// placesText is a form's option places, as "; session: morning 40,
// afternoon 40" ("" without).
func placesText(f *Form) string {
	field, places := f.PlaceField()
	if field == "" {
		return ""
	}
	parts := make([]string, len(places))
	for i, p := range places {
		parts[i] = p.Value + " " + capacityText(p.Capacity)
	}
	return "; " + field + ": " + strings.Join(parts, ", ")
}

func whenFullText(d Definition) string {
	if d.Capacity == nil && len(d.placeFields()) == 0 {
		return "none (no limit)"
	}
	if d.WhenFull == "waitlist" {
		return "waitlist"
	}
	return "reject"
}

func uniqueText(u [][]string) string {
	if len(u) == 0 {
		return "none"
	}
	sets := make([]string, len(u))
	for i, s := range u {
		sets[i] = "[" + strings.Join(s, ", ") + "]"
	}
	return strings.Join(sets, " ")
}

// jsonText is a setting as compact JSON: webhook secrets are not in it
// (their JSON tag is "-"), so a change shows no secret.
func jsonText(v any) string {
	b, err := json.Marshal(v)
	if err != nil || string(b) == "null" || string(b) == "{}" {
		return "none"
	}
	return string(b)
}
