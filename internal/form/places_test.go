package form

import (
	"strconv"
	"strings"
	"testing"
)

// A select field's options with capacities are the form's places per
// option, and the store's record carries them; when_full needs no form
// capacity then.
func TestOptionPlaces(t *testing.T) {
	t.Parallel()
	f := mustForm(t, `
id: fair
fields:
  - {name: name, type: text}
  - name: session
    type: select
    options:
      - {value: morning,   label: {en: Morning,   zh: 上午}, capacity: 40}
      - {value: afternoon, label: {en: Afternoon, zh: 下午}, capacity: 0}
      - evening
when_full: waitlist
`)
	field, places := f.PlaceField()
	if field != "session" || len(places) != 3 {
		t.Fatalf("place field %q %+v", field, places)
	}
	if *places[0].Capacity != 40 || *places[1].Capacity != 0 || places[2].Capacity != nil || places[2].Value != "evening" {
		t.Fatalf("places %+v", places)
	}
	rec := Records([]*Form{f})[0]
	if rec.PlaceField != "session" || len(rec.Places) != 3 || rec.WhenFull != WhenFullWaitlist || rec.Capacity != nil {
		t.Fatalf("record %+v", rec)
	}
	if got := f.Fields()[1].Options[1].Label.For("zh-CN"); got != "下午" {
		t.Errorf("option label %q", got)
	}
	// Without option capacities a form has no place field, and when_full
	// defaults to reject only where something is limited.
	plain := mustForm(t, "id: p\nfields: [{name: s, type: select, options: [a, b]}]")
	if field, places := plain.PlaceField(); field != "" || places != nil || plain.Def.WhenFull != "" {
		t.Fatalf("plain form: %q %v %q", field, places, plain.Def.WhenFull)
	}
	limited := mustForm(t, "id: l\nfields: [{name: s, type: select, options: [{value: a, capacity: 1}]}]")
	if limited.Def.WhenFull != WhenFullReject {
		t.Fatalf("when_full %q, want reject by default for a form with option places", limited.Def.WhenFull)
	}
}

// Changing an option's places is a change of capacity, confirmed as the
// form's is (formd forms apply, the console's editor); so is review.
func TestCompareOptionPlaces(t *testing.T) {
	t.Parallel()
	src := func(am int, review bool) *Form {
		return mustForm(t, "id: f\nfields: [{name: s, type: select, options: [{value: am, capacity: "+strconv.Itoa(am)+"}, pm]}]\nwhen_full: waitlist\nreview: "+strconv.FormatBool(review))
	}
	c := Compare(src(40, false), src(30, true))
	if !c.Changed("capacity") || !c.Changed("review") {
		t.Fatalf("changes %+v: want capacity and review", c.Settings)
	}
	if got := strings.Join(c.Lines(), "\n"); !strings.Contains(got, "capacity: no limit; s: am 40, pm no limit → no limit; s: am 30, pm no limit") {
		t.Fatalf("lines:\n%s", got)
	}
	if c := Compare(src(40, false), src(40, false)); !c.Empty() {
		t.Fatalf("no change: %+v", c)
	}
}
