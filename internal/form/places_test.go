package form

import (
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
