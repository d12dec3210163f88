package hosted

import (
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/formd/formd/internal/form"
)

const applicationForm = `
id: application
fields:
  - {name: name, type: text, required: true}
  - {name: class, type: text, prefill: true}
  - {name: phone, type: phone}
  - {name: essay, type: textarea}
  - {name: utm_source, type: hidden}
pages:
  - {title: {en: You, zh: 个人信息}, fields: [name, phone]}
  - {title: {en: School, zh: 学校}, fields: [class]}
  - {fields: [essay]}
`

// A form with pages is one page with a heading per step (in the pages'
// order) and loads the step script; a prefill field takes its first
// value from the query string, a hidden field its value, and any other
// field nothing from it.
func TestPagePagesPrefillHidden(t *testing.T) {
	t.Parallel()
	parsed, err := form.Parse([]byte(applicationForm), "app.yaml")
	if err != nil {
		t.Fatal(err)
	}
	h := New(formMap{"application": parsed[0]}, nil, nil, func() time.Time { return testNow }, slog.New(slog.DiscardHandler))
	mux := http.NewServeMux()
	h.Register(mux)
	page := body(t, get(t, mux, "/f/application?class=3B&utm_source=wechat&name=Mallory", nil))
	order := []string{
		`<input type="hidden" name="utm_source" value="wechat">`,
		`<section class="step" data-step="0" aria-labelledby="step-0">`, `<h2 id="step-0">You</h2>`, `name="name"`, `name="phone"`,
		`<section class="step" data-step="1"`, `<h2 id="step-1">School</h2>`, `name="class" data-label="class" value="3B"`,
		`<h2 id="step-2">Step 3</h2>`, `name="essay"`,
	}
	at := 0
	for _, want := range order {
		i := strings.Index(page[at:], want)
		if i < 0 {
			t.Fatalf("page lacks %s after position %d\n%s", want, at, page)
		}
		at += i + len(want)
	}
	if strings.Contains(page, "Mallory") {
		t.Error("a field without prefill took a value from the query string")
	}
	for _, want := range []string{`src="/sdk/steps.js?v=` + h.sdkFiles["steps.js"].version + `"`, `data-formd-steps data-step-next="Next" data-step-back="Back" data-step-progress="Step %d of %d"`} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %s", want)
		}
	}
	zh := body(t, get(t, mux, "/f/application", map[string]string{"Accept-Language": "zh-CN"}))
	if !strings.Contains(zh, `<h2 id="step-2">第 3 步</h2>`) || !strings.Contains(zh, `data-step-next="下一步"`) {
		t.Error("the steps are not in Chinese")
	}
	res := get(t, mux, "/sdk/steps.js", nil)
	if js := body(t, res); res.StatusCode != 200 || !strings.Contains(js, "export function bindSteps") {
		t.Fatalf("steps.js: %d", res.StatusCode)
	}
}
