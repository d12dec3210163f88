package form

import (
	"fmt"
	"slices"
	"strings"
)

// Pages (DESIGN §5): a long form's fields grouped into steps with titles.
// They change nothing the server checks; the hosted page shows one step
// at a time (sdk/js/steps.js), and the SDK has them in the public
// definition for custom front-ends.

// checkPages refuses pages that name an unknown field, name a field twice
// (on one page or two), or leave a field that people see on no page.
func (c *compiler) checkPages(d Definition) {
	if len(d.Pages) == 0 {
		return
	}
	fields := map[string]Field{}
	for _, fd := range d.Fields {
		fields[fd.Name] = fd
	}
	onPage := map[string]int{}
	for i, p := range d.Pages {
		if len(p.Fields) == 0 {
			c.add("", fmt.Sprintf("pages[%d] lists no fields; give each page the fields it shows", i))
		}
		for _, n := range p.Fields {
			fd, ok := fields[n]
			switch {
			case !ok:
				c.add("", fmt.Sprintf("pages[%d] names %q, which is not a field of this form", i, n))
				continue
			case fd.Type == TypeHidden:
				c.add(n, fmt.Sprintf("is a hidden field, which no page shows; take it out of pages[%d]", i))
				continue
			}
			if j, twice := onPage[n]; twice {
				if j == i {
					c.add(n, fmt.Sprintf("pages[%d] names this field twice", i))
				} else {
					c.add(n, fmt.Sprintf("is on pages[%d] and pages[%d]; a field is on one page", j, i))
				}
				continue
			}
			onPage[n] = i
		}
	}
	var missing []string
	for _, fd := range d.Fields {
		if _, ok := onPage[fd.Name]; !ok && fd.Type != TypeHidden {
			missing = append(missing, fd.Name)
		}
	}
	switch {
	case len(missing) == 1:
		c.add(missing[0], "is on no page; with pages, every field people see is on one")
	case len(missing) > 1:
		c.add("", fmt.Sprintf("%s are on no page; with pages, every field people see is on one", strings.Join(missing, ", ")))
	}
}

// Steps are the form's pages as field indexes into Fields, in page
// order; nil for a form without pages.
func (f *Form) Steps() [][]int {
	if len(f.Def.Pages) == 0 {
		return nil
	}
	out := make([][]int, len(f.Def.Pages))
	for i, p := range f.Def.Pages {
		for _, n := range p.Fields {
			if j, ok := f.byName[n]; ok && !slices.Contains(out[i], j) {
				out[i] = append(out[i], j)
			}
		}
	}
	return out
}
