package console_test

import (
	"bytes"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"golang.org/x/net/html"

	"github.com/formd/formd/internal/accounts"
	"github.com/formd/formd/internal/server/servertest"
)

// formValues are what a browser would post from the page's form that
// has the attribute attr: every named input, textarea and select with
// its value (checkboxes and radios only when checked), buttons left out.
func formValues(t *testing.T, page, attr string) url.Values {
	t.Helper()
	doc, err := html.Parse(strings.NewReader(page))
	if err != nil {
		t.Fatal(err)
	}
	attrOf := func(n *html.Node, key string) (string, bool) {
		for _, a := range n.Attr {
			if a.Key == key {
				return a.Val, true
			}
		}
		return "", false
	}
	var target *html.Node
	var find func(*html.Node)
	find = func(n *html.Node) {
		if n.Type == html.ElementNode && n.Data == "form" {
			if _, ok := attrOf(n, attr); ok && target == nil {
				target = n
			}
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			find(c)
		}
	}
	find(doc)
	if target == nil {
		t.Fatalf("no form with %s in the page:\n%.2000s", attr, page)
	}
	v := url.Values{}
	var walk func(*html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.ElementNode {
			name, named := attrOf(n, "name")
			switch n.Data {
			case "input":
				typ, _ := attrOf(n, "type")
				val, _ := attrOf(n, "value")
				_, checked := attrOf(n, "checked")
				switch {
				case !named:
				case typ == "checkbox" || typ == "radio":
					if checked {
						if val == "" {
							val = "on"
						}
						v.Add(name, val)
					}
				default:
					v.Add(name, val)
				}
			case "textarea":
				if named {
					var b strings.Builder
					for c := n.FirstChild; c != nil; c = c.NextSibling {
						b.WriteString(c.Data)
					}
					v.Add(name, b.String())
				}
			case "select":
				if named {
					first, chosen := "", ""
					for c := n.FirstChild; c != nil; c = c.NextSibling {
						if c.Type != html.ElementNode || c.Data != "option" {
							continue
						}
						val, ok := attrOf(c, "value")
						if !ok && c.FirstChild != nil {
							val = c.FirstChild.Data
						}
						if first == "" {
							first = val
						}
						if _, sel := attrOf(c, "selected"); sel {
							chosen = val
						}
					}
					if chosen == "" {
						chosen = first
					}
					v.Add(name, chosen)
				}
			}
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(target)
	return v
}

// fieldIndex is the builder's index of the field named name.
func fieldIndex(t *testing.T, v url.Values, name string) string {
	t.Helper()
	for k, vs := range v {
		if strings.HasSuffix(k, ".name") && vs[0] == name {
			return strings.TrimSuffix(strings.TrimPrefix(k, "f"), ".name")
		}
	}
	t.Fatalf("no field %s in %v", name, v)
	return ""
}

// TestBuildAFormInTheConsole: the scenario without a browser.
// An editor makes the photo registration from its template, changes a
// label in both languages, adds a required select with three options,
// moves two fields, sees the preview follow the draft, publishes, and a
// participant submits on the hosted page; lowering places below the
// entries asks for confirmation; an earlier version comes back. An
// editor of another site can neither see nor build on it.
func TestBuildAFormInTheConsole(t *testing.T) {
	t.Parallel()
	h := servertest.Start(t, "", servertest.Options{})
	b := signIn(t, h, "ed@example.org", accounts.Editor, "school")
	code, page := b.do("GET", "/admin/forms/new", nil)
	if code != 200 || !strings.Contains(page, "Exam or class registration with a photo") {
		t.Fatalf("new form page: %d %.2000s", code, page)
	}
	code, page = b.do("POST", "/admin/forms/new", url.Values{"template": {"exam"}, "langs": {"both"}, "title_en": {"Spring exam 2027"}, "title_zh": {"2027 春季考试"}, "site": {"school"}})
	if code != 200 || !strings.Contains(page, "Build: Spring exam 2027") || !strings.Contains(page, "Not published yet") {
		t.Fatalf("create from the template: %d %.3000s", code, page)
	}
	// The id came from the title; the form is a draft, not live.
	resp, err := http.Get(h.URL + "/f/spring-exam-2027")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 404 {
		t.Fatalf("the draft is live: %d", resp.StatusCode)
	}
	code, again := b.do("POST", "/admin/forms/new", url.Values{"template": {"blank"}, "langs": {"en"}, "title_en": {"x"}, "id": {"spring-exam-2027"}, "site": {"school"}})
	if code != 422 || !strings.Contains(again, "is taken by another form") {
		t.Fatalf("a second form under the same address: %d %.2000s", code, again)
	}
	build := "/admin/forms/spring-exam-2027/build"
	post := func(v url.Values) (int, string) {
		t.Helper()
		return b.do("POST", build, v)
	}
	v := formValues(t, page, "data-builder")
	name := fieldIndex(t, v, "name")
	v.Set("f"+name+".label_en", "Your full name")
	v.Set("f"+name+".label_zh", "您的姓名")
	v.Set("add_type", "select")
	v.Set("op", "add")
	code, page = post(v)
	if code != 200 || !strings.Contains(page, "Your full name") || !strings.Contains(page, "您的姓名") {
		t.Fatalf("add a select: %d %.3000s", code, page)
	}
	v = formValues(t, page, "data-builder")
	sel := fieldIndex(t, v, "select")
	v.Set("f"+sel+".name", "session")
	v.Set("f"+sel+".label_en", "Session")
	v.Set("f"+sel+".label_zh", "场次")
	v.Set("f"+sel+".required", "on")
	v.Set("f"+sel+".options", "morning | Morning | 上午\nafternoon | Afternoon | 下午\nevening | Evening | 晚上")
	v.Set("op", "up:"+sel) // the new select goes above the photo
	code, page = post(v)
	if code != 200 {
		t.Fatalf("move the select up: %d %.3000s", code, page)
	}
	v = formValues(t, page, "data-builder")
	if fieldIndex(t, v, "session") >= fieldIndex(t, v, "photo") {
		t.Fatalf("the select is not above the photo: %v", v)
	}
	// The preview shows the draft, in each language.
	code, pv := b.do("GET", "/admin/forms/spring-exam-2027/preview?in=zh", nil)
	if code != 200 || !strings.Contains(pv, "场次") || !strings.Contains(pv, "晚上") || !strings.Contains(pv, "预览") || strings.Contains(pv, "/sdk/formd.js") {
		t.Fatalf("the Chinese preview: %d %.3000s", code, pv)
	}
	// A post in the preview gets a participant's messages, nothing kept.
	code, pv = b.do("POST", "/admin/forms/spring-exam-2027/preview?in=en", url.Values{"name": {""}})
	if code != 200 || !strings.Contains(pv, "Please correct the marked fields") {
		t.Fatalf("the preview's messages: %d %.3000s", code, pv)
	}
	// A problem is shown on its field, and nothing is published.
	v.Set("f"+fieldIndex(t, v, "photo")+".accept", "jpeg")
	v.Set("op", "publish")
	code, page = post(v)
	if code != 422 || !strings.Contains(page, `id="f`+fieldIndex(t, v, "photo")+`-problems"`) || !strings.Contains(page, "jpeg") {
		t.Fatalf("publish with a bad accept: %d %.4000s", code, page)
	}
	v = formValues(t, page, "data-builder")
	v.Set("f"+fieldIndex(t, v, "photo")+".accept", "image/jpeg, image/png")
	v.Set("f"+fieldIndex(t, v, "photo")+".required", "")
	v.Del("f" + fieldIndex(t, v, "photo") + ".required")
	v.Set("capacity", "3")
	v.Set("op", "publish")
	code, page = post(v)
	if code != 200 || !strings.Contains(page, "Published: participants see this version now") {
		t.Fatalf("publish: %d %.3000s", code, page)
	}
	resp, err = http.Get(h.URL + "/f/spring-exam-2027?lang=zh")
	if err != nil {
		t.Fatal(err)
	}
	hosted, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !bytes.Contains(hosted, []byte("您的姓名")) || !bytes.Contains(hosted, []byte("场次")) {
		t.Fatalf("the hosted page: %d %.2000s", resp.StatusCode, hosted)
	}
	// What the builder published, exported, applies unchanged through the
	// plan formd forms apply shows.
	code, exported := b.do("GET", "/admin/forms/spring-exam-2027/definition.yaml", nil)
	if code != 200 || !strings.Contains(exported, "session") {
		t.Fatalf("export: %d %s", code, exported)
	}
	if code, plan := adminAPI(t, h, "POST", "/v1/admin/forms/plan", exported); code != 200 || !strings.Contains(plan, `"lines":["no change to fields, capacity, unique, notify, site, waitlist, review or spam"]`) || !strings.Contains(plan, `"risks":[]`) {
		t.Fatalf("the exported definition's plan: %d %s", code, plan)
	}
	submit(t, h, "spring-exam-2027", `{"name":"Li Lei","student_no":"S1","email":"li@example.org","level":"beginner","session":"morning"}`)
	submit(t, h, "spring-exam-2027", `{"name":"Han Mei","student_no":"S2","email":"han@example.org","level":"advanced","session":"evening"}`)

	// Places below the entries: the confirmation first, then published.
	if code, page = b.do("GET", build, nil); code != 200 {
		t.Fatalf("the builder of the published form: %d", code)
	}
	v = formValues(t, page, "data-builder")
	v.Set("capacity", "1")
	v.Set("op", "publish")
	code, page = post(v)
	if code != 409 || !strings.Contains(page, "Check the changes before they are saved") || !strings.Contains(page, "Places changes from 3 to 1 on a form with 2 entries") {
		t.Fatalf("lower the places: %d %.4000s", code, page)
	}
	v = formValues(t, page, "data-builder")
	v.Set("op", "publish")
	if code, page = post(v); code != 200 || !strings.Contains(page, "Published") {
		t.Fatalf("confirm: %d %.3000s", code, page)
	}
	// Version history: who, what; roll back to the first version.
	code, page = b.do("GET", "/admin/forms/spring-exam-2027/versions", nil)
	if code != 200 || !strings.Contains(page, "Form created") || !strings.Contains(page, "Form published") || !strings.Contains(page, "capacity: 3 → 1") || !strings.Contains(page, "ed@example.org") {
		t.Fatalf("versions: %d %.4000s", code, page)
	}
	code, page = b.do("POST", "/admin/forms/spring-exam-2027/versions/1/rollback", url.Values{})
	if code != 409 || !strings.Contains(page, "Places changes from 1 to 3") {
		t.Fatalf("rollback asks first: %d %.4000s", code, page)
	}
	confirm := formValues(t, strings.Replace(page, `<form method="post" action="/admin/forms/spring-exam-2027/versions/1/rollback" class="stack">`, `<form method="post" data-confirm class="stack">`, 1), "data-confirm")
	if code, page = b.do("POST", "/admin/forms/spring-exam-2027/versions/1/rollback", confirm); code != 200 || !strings.Contains(page, "The earlier version is back") || !strings.Contains(page, "Earlier version restored") {
		t.Fatalf("rollback confirmed: %d %.4000s", code, page)
	}

	// A form with entries offers archiving, and deleting only through
	// the page that asks for its id; an empty copy is deleted at once.
	if _, page = b.do("GET", "/admin/forms/spring-exam-2027", nil); strings.Contains(page, `>Delete the form</button>`) ||
		!strings.Contains(page, `href="/admin/forms/spring-exam-2027/delete"`) || !strings.Contains(page, "Archive") {
		t.Errorf("the form page of a form with entries offers to delete it without confirming:\n%.3000s", page)
	}
	if code, page = b.do("POST", "/admin/forms/spring-exam-2027/duplicate", url.Values{"id": {"spring-exam-2028"}}); code != 200 || !strings.Contains(page, "The copy is made") {
		t.Fatalf("copy the form: %d %.2000s", code, page)
	}
	if _, page = b.do("GET", "/admin/forms/spring-exam-2028", nil); !strings.Contains(page, "Delete the form") {
		t.Errorf("the empty copy does not offer deleting:\n%.3000s", page)
	}
	if code, page = b.do("POST", "/admin/forms/spring-exam-2028/delete", url.Values{}); code != 200 || !strings.Contains(page, "The form is deleted") || strings.Contains(page, "spring-exam-2028") {
		t.Fatalf("delete the copy: %d %.2000s", code, page)
	}
	// The confirmation names what goes, in each language; without the id
	// or with another form's, nothing is deleted.
	code, page = b.do("GET", "/admin/forms/spring-exam-2027/delete", nil)
	if code != 200 || !strings.Contains(page, "Deleting the form erases, for good:") || !strings.Contains(page, "Entries (stored): 2") ||
		!strings.Contains(page, `<label for="confirm-id">Type the form&#39;s id to confirm</label>`) {
		t.Fatalf("the confirmation page: %d %.4000s", code, page)
	}
	if code, page = b.do("GET", "/admin/forms/spring-exam-2027/delete?lang=zh", nil); code != 200 || !strings.Contains(page, "报名（已保存）：2 条") || !strings.Contains(page, "输入表单 ID 以确认") {
		t.Errorf("the confirmation page in Chinese: %d %.4000s", code, page)
	}
	b.do("GET", "/admin/forms/spring-exam-2027/delete?lang=en", nil)
	if code, page = b.do("POST", "/admin/forms/spring-exam-2027/delete", url.Values{}); code != 409 || !strings.Contains(page, "Type the form&#39;s id to confirm") {
		t.Errorf("delete a form with entries unconfirmed: %d %.2000s", code, page)
	}
	if code, page = b.do("POST", "/admin/forms/spring-exam-2027/delete", url.Values{"confirm": {"spring-exam-2028"}}); code != 409 ||
		!strings.Contains(page, "“spring-exam-2028” is not this form&#39;s id: nothing was deleted.") || !strings.Contains(page, `aria-invalid="true"`) {
		t.Errorf("delete with another id typed: %d %.3000s", code, page)
	}
	if code, page = b.do("GET", "/admin/forms/spring-exam-2027/delete", nil); code != 200 || !strings.Contains(page, "Entries (stored): 2") {
		t.Errorf("the entries after a wrong id: %d %.3000s", code, page)
	}

	// An editor of another site: not found, and not able to build here.
	other := signIn(t, h, "oz@example.org", accounts.Editor, "elsewhere")
	for _, path := range []string{build, "/admin/forms/spring-exam-2027/versions", "/admin/forms/spring-exam-2027/preview?in=en", "/admin/forms/spring-exam-2027/definition.yaml"} {
		if code, body := other.do("GET", path, nil); code != 404 {
			t.Errorf("another site's editor GET %s: %d %.500s", path, code, body)
		}
	}
	if code, _ := other.do("POST", build, url.Values{"op": {"publish"}, "site": {"elsewhere"}}); code != 404 {
		t.Errorf("another site's editor publishes: %d", code)
	}
	if code, body := other.do("POST", "/admin/forms/new", url.Values{"template": {"blank"}, "langs": {"en"}, "title_en": {"Mine"}, "site": {"school"}}); code != 422 || !strings.Contains(body, "You cannot make forms on the site") {
		t.Errorf("another site's editor makes a form on school: %d %.1000s", code, body)
	}
	if code, body := other.do("GET", "/admin/forms", nil); code != 200 || strings.Contains(body, "spring-exam-2027") {
		t.Errorf("another site's editor sees the form in the list: %d", code)
	}
	for _, m := range []string{"GET", "POST"} {
		if code, _ := other.do(m, "/admin/forms/spring-exam-2027/delete", url.Values{"confirm": {"spring-exam-2027"}}); code != 404 {
			t.Errorf("another site's editor %s the deletion: %d", m, code)
		}
	}
	viewer := signIn(t, h, "vi@example.org", accounts.Viewer, "school")
	if code, _ := viewer.do("POST", "/admin/forms/spring-exam-2027/delete", url.Values{"confirm": {"spring-exam-2027"}}); code != 403 {
		t.Errorf("a viewer deletes: %d", code)
	}

	// Typed, the id deletes the form and its entries; the id is free again.
	if code, page = b.do("POST", "/admin/forms/spring-exam-2027/delete", url.Values{"confirm": {"spring-exam-2027"}}); code != 200 || !strings.Contains(page, "The form is deleted") {
		t.Fatalf("delete confirmed: %d %.3000s", code, page)
	}
	if code, _ = b.do("GET", "/admin/forms/spring-exam-2027", nil); code != 404 {
		t.Errorf("the deleted form's page: %d", code)
	}
	code, page = b.do("GET", "/admin/audit", nil)
	if code != 200 || !strings.Contains(page, "erased 2 entries (2 stored)") {
		t.Errorf("the audit log of the deletion: %d %.4000s", code, page)
	}
}
