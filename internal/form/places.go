package form

// Options with places of their own (DESIGN §5, "Organizers'
// registrations"): a select field's options may each carry a capacity,
// such as the morning and afternoon sessions of a fair. The store decides
// those places as it decides the form's; this file says which field and
// options have them.

// OptionPlaces is one option's own limit as the store keeps it: the
// option's value and its capacity, nil when the option has no limit of its
// own (an option without capacity beside options with one).
type OptionPlaces struct {
	Value    string
	Capacity *int
}

// placeFields names the select fields some of whose options have a
// capacity (a valid definition has at most one).
func (d *Definition) placeFields() []string {
	var names []string
	for _, f := range d.Fields {
		if f.Type != TypeSelect {
			continue
		}
		for _, o := range f.Options {
			if o.Capacity != nil {
				names = append(names, f.Name)
				break
			}
		}
	}
	return names
}

// PlaceField is the select field whose options have places of their own,
// and those options (every option of the field, each with its capacity or
// nil); "" and nil for a form without option places.
func (f *Form) PlaceField() (string, []OptionPlaces) {
	names := f.Def.placeFields()
	if len(names) == 0 {
		return "", nil
	}
	for _, fd := range f.Def.Fields {
		if fd.Name != names[0] {
			continue
		}
		out := make([]OptionPlaces, len(fd.Options))
		for i, o := range fd.Options {
			out[i] = OptionPlaces{Value: o.Value, Capacity: o.Capacity}
		}
		return fd.Name, out
	}
	return "", nil
}
