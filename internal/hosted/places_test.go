package hosted

import (
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/formd/formd/internal/form"
	"github.com/formd/formd/internal/store"
)

const sessionForms = `
id: fair2
fields:
  - name: session
    type: select
    options:
      - {value: morning,   label: {en: Morning,   zh: 上午}, capacity: 2}
      - {value: afternoon, label: {en: Afternoon, zh: 下午}, capacity: 2}
      - {value: evening}
when_full: waitlist
---
id: exam2
fields:
  - name: session
    type: select
    options:
      - {value: morning,   label: {en: Morning,   zh: 上午}, capacity: 1}
      - {value: afternoon, label: {en: Afternoon, zh: 下午}, capacity: 1}
when_full: reject
`

// A full session shows "full — waitlist" beside it on a form that
// waitlists, and is marked full and cannot be chosen on one that turns
// people away; sessions with places stay as they are.
func TestPageMarksFullOptions(t *testing.T) {
	t.Parallel()
	parsed, err := form.Parse([]byte(sessionForms), "sessions.yaml")
	if err != nil {
		t.Fatal(err)
	}
	forms := formMap{}
	for _, f := range parsed {
		forms[f.ID()] = f
	}
	full := map[string]store.Capacity{"morning": {Taken: 2}, "afternoon": {Taken: 1}, "evening": {Taken: 9}}
	places := &fakePlaces{data: map[string]store.Capacity{
		"fair2": {Taken: 12, Options: full},
		"exam2": {Taken: 1, Options: map[string]store.Capacity{"morning": {Taken: 1}}},
	}}
	h := New(forms, store.NewPlacesCache(places, func() time.Time { return testNow }, time.Second), nil,
		func() time.Time { return testNow }, slog.New(slog.DiscardHandler))
	mux := http.NewServeMux()
	h.Register(mux)
	for _, tc := range []struct {
		name, url string
		lang      string
		want, not []string
	}{
		{"waitlist en", "/f/fair2", "en",
			[]string{`<option value="morning">Morning — full, waitlist</option>`, `<option value="afternoon">Afternoon</option>`, `<option value="evening">evening</option>`},
			[]string{"disabled"}},
		{"waitlist zh", "/f/fair2", "zh-CN",
			[]string{`<option value="morning">上午（已满，可候补）</option>`, `<option value="afternoon">下午</option>`}, nil},
		{"reject", "/f/exam2", "en",
			[]string{`<option value="morning" disabled>Morning — full</option>`, `<option value="afternoon">Afternoon</option>`}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			page := body(t, get(t, mux, tc.url, map[string]string{"Accept-Language": tc.lang}))
			for _, w := range tc.want {
				if !strings.Contains(page, w) {
					t.Errorf("page lacks %s", w)
				}
			}
			for _, n := range tc.not {
				if strings.Contains(page, n) {
					t.Errorf("page has %s", n)
				}
			}
		})
	}
}
