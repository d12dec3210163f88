package console

import (
	"bytes"
	"encoding/json"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/formd/formd/internal/form"
)

// TestBuilderRoundTripsEveryFieldType: a definition with every field type
// and the settings the builder shows, read into the builder and written
// back, is the same form (formd forms apply would change nothing), keeps
// what the builder does not show, and the builder's own definitions of
// its templates each check.
func TestBuilderRoundTripsEveryFieldType(t *testing.T) {
	t.Parallel()
	const def = `id: every
site: town
title: {en: Every field, zh: 所有类型}
description: {en: All of them, zh: 全部}
fields:
  - {name: name, type: text, required: true, min: 2, max: 100, label: {en: Name, zh: 姓名}, help: {en: As on your ID, zh: 与证件一致}, pattern: "^[^0-9]+$"}
  - {name: about, type: textarea, max: 2000, label: {en: About you, zh: 自我介绍}}
  - {name: email, type: email, required: true, label: {en: E-mail, zh: 电子邮箱}}
  - {name: phone, type: phone, region: CN, label: {en: Phone, zh: 手机号}}
  - {name: age, type: number, min: 6, max: 99, integer: true, label: {en: Age, zh: 年龄}}
  - name: size
    type: select
    label: {en: Size, zh: 尺码}
    options: [S, M, L]
  - name: days
    type: multiselect
    min: 1
    max: 2
    label: {en: Days, zh: 日期}
    options:
      - {value: sat, label: {en: Saturday, zh: 周六}}
      - {value: sun, label: {en: Sunday, zh: 周日}}
  - {name: agree, type: checkbox, required: true, label: {en: I agree, zh: 我同意}}
  - {name: day, type: date, min: 2027-03-01, max: 2027-03-31, label: {en: Day, zh: 日期}}
  - {name: photo, type: file, max_size: 5MiB, max_files: 2, accept: [image/jpeg, image/png], label: {en: Photo, zh: 照片}}
unique: [[email], [name, phone]]
capacity: 30
when_full: waitlist
opens_at: 2027-03-01T09:00:00+08:00
closes_at: 2027-03-20T18:00:00+08:00
origins: [https://www.example.org]
retention: 365d
spam: {honeypot: website, min_seconds: 2, challenge: pow}
rate_limit: {requests: 5, per: 1m}
notify:
  email: {to: [owner@example.org], confirm: email, lang: zh}
  webhooks: [{url: "https://hooks.example.org/every", secret: whsec_MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3}]
`
	d, base, err := readDraft([]byte(def), time.UTC)
	if err != nil {
		t.Fatal(err)
	}
	out, err := d.yaml(base, time.UTC)
	if err != nil {
		t.Fatal(err)
	}
	a, err := form.Parse([]byte(def), "")
	if err != nil {
		t.Fatal(err)
	}
	b, err := form.Parse(out, "")
	if err != nil {
		t.Fatalf("the builder's YAML does not check: %v\n%s", err, out)
	}
	ja, _ := json.Marshal(a[0].Def)
	jb, _ := json.Marshal(b[0].Def)
	if !bytes.Equal(ja, jb) {
		t.Fatalf("the round trip changed the form:\n before %s\n after  %s\n%s", ja, jb, out)
	}
	if c := form.Compare(a[0], b[0]); !c.Empty() {
		t.Fatalf("forms apply would change: %v", c.Lines())
	}
	if d.OwnerEmails != "owner@example.org" || d.ConfirmField != "email" || len(d.Webhooks) != 1 {
		t.Errorf("the builder's e-mail and webhooks: %q %q %q", d.OwnerEmails, d.ConfirmField, d.Webhooks)
	}
	if a[0].Def.Notify == nil || b[0].Def.Notify == nil || len(b[0].Def.Notify.Webhooks) != 1 || b[0].Def.Notify.Webhooks[0].Secret != a[0].Def.Notify.Webhooks[0].Secret ||
		b[0].Def.Notify.Email == nil || b[0].Def.Notify.Email.Lang != "zh" || b[0].Def.Notify.Email.Confirm != "email" {
		t.Errorf("notify changed: %+v", b[0].Def.Notify)
	}
	// The owner's address and the confirmation removed: the e-mail goes,
	// the webhooks stay.
	d.OwnerEmails, d.ConfirmField = "", ""
	_, base2, _ := readDraft([]byte(def), time.UTC)
	cleared, err := d.yaml(base2, time.UTC)
	if err != nil {
		t.Fatal(err)
	}
	if c, err := form.Parse(cleared, ""); err != nil || c[0].Def.Notify == nil || c[0].Def.Notify.Email != nil || len(c[0].Def.Notify.Webhooks) != 1 {
		t.Errorf("e-mail cleared: %v %s", err, cleared)
	}
	for _, keep := range []string{"pattern:", "rate_limit:", "[name, phone]", "integer: true", "min_seconds: 2"} {
		if !strings.Contains(string(out), keep) {
			t.Errorf("the builder dropped %q:\n%s", keep, out)
		}
	}
	tpls, _ := filepath.Glob("formtemplates/*.yaml")
	if len(tpls) != 6 {
		t.Fatalf("%d templates, want 6", len(tpls))
	}
	for _, p := range tpls {
		raw, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		for _, langs := range []string{"en", "zh", "both"} {
			d, base, err := readDraft(raw, time.UTC)
			if err != nil {
				t.Fatal(err)
			}
			d.ID, d.Langs, d.TitleEN, d.TitleZH = "t", langs, "T", "表"
			out, err := d.yaml(base, time.UTC)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := form.Parse(out, ""); err != nil {
				t.Errorf("template %s in %s does not check: %v\n%s", p, langs, err, out)
			}
		}
	}
}

// TestBuilderRoundTripsSessions: the session features (options with their
// own places, show_if of one test and of several, pages with their order,
// hidden and prefill fields, review) read into the builder and written
// back are the same form; and what the builder's page posts, changed,
// writes what the organizer chose.
func TestBuilderRoundTripsSessions(t *testing.T) {
	t.Parallel()
	const def = `id: fair
title: {en: Fair, zh: 招聘会}
fields:
  - {name: name, type: text, required: true, prefill: true, label: {en: Name, zh: 姓名}}
  - {name: age, type: number, label: {en: Age, zh: 年龄}}
  - {name: guardian, type: phone, required: true, label: {en: Guardian's phone, zh: 监护人电话}, show_if: {field: age, in: ["16", "17"]}}
  - name: session
    type: select
    required: true
    label: {en: Session, zh: 场次}
    options:
      - {value: am, label: {en: Morning, zh: 上午}, capacity: 40}
      - {value: pm, label: {en: Afternoon, zh: 下午}, capacity: 2}
      - {value: eve, label: {en: Evening, zh: 晚上}}
  - {name: lunch, type: checkbox, label: {en: Lunch, zh: 午餐}, show_if: {field: session, equals: am}}
  - {name: bus, type: checkbox, label: {en: Bus, zh: 班车}, show_if: {all: [{field: session, not: eve}, {field: lunch, answered: true}]}}
  - {name: note, type: textarea, label: {en: Note, zh: 备注}, show_if: {field: age, answered: false}}
  - {name: utm_source, type: hidden, max: 64}
pages:
  - {title: {en: You, zh: 您}, fields: [age, name, guardian]}
  - {title: {en: Session, zh: 场次}, fields: [session, lunch, bus, note]}
when_full: waitlist
review: true
`
	roundTrip := func(t *testing.T, d draftForm, base *yaml.Node) []*form.Form {
		t.Helper()
		out, err := d.yaml(base, time.UTC)
		if err != nil {
			t.Fatal(err)
		}
		b, err := form.Parse(out, "")
		if err != nil {
			t.Fatalf("the builder's YAML does not check: %v\n%s", err, out)
		}
		return b
	}
	d, base, err := readDraft([]byte(def), time.UTC)
	if err != nil {
		t.Fatal(err)
	}
	a, err := form.Parse([]byte(def), "")
	if err != nil {
		t.Fatal(err)
	}
	b := roundTrip(t, d, base)
	ja, _ := json.Marshal(a[0].Def)
	jb, _ := json.Marshal(b[0].Def)
	if !bytes.Equal(ja, jb) {
		t.Fatalf("the round trip changed the form:\n before %s\n after  %s", ja, jb)
	}
	if c := form.Compare(a[0], b[0]); !c.Empty() {
		t.Fatalf("forms apply would change: %v", c.Lines())
	}
	session := d.Fields[3]
	if session.Places["am"] != "40" || session.Places["pm"] != "2" || session.Places["eve"] != "" || !d.Review || len(d.Pages) != 2 ||
		d.Fields[0].Page != "1" || d.Fields[4].Page != "2" || !d.Fields[0].Prefill || d.Fields[5].ShowKept == "" ||
		d.Fields[2].ShowOp != "in" || d.Fields[2].ShowValue != "16, 17" || d.Fields[6].ShowOp != "unanswered" {
		t.Fatalf("the builder read: %+v", d)
	}

	// The page's form, as the browser posts it, with changes: the
	// afternoon's places raised, the evening given some, the lunch asked
	// when the session is not the evening, the kept condition dropped, a
	// third step, review off.
	v := url.Values{"fields": {strconv.Itoa(len(d.Fields))}, "pages": {"3"}, "langs": {"both"}, "title_en": {"Fair"}, "title_zh": {"招聘会"},
		"when_full": {"waitlist"}, "p0.title_en": {"You"}, "p0.title_zh": {"您"}, "p1.title_en": {"Session"}, "p1.title_zh": {"场次"},
		"p2.title_en": {"More"}, "p2.title_zh": {"更多"}}
	for i, f := range d.Fields {
		p := "f" + strconv.Itoa(i) + "."
		v.Set(p+"orig", f.Orig)
		v.Set(p+"name", f.Name)
		v.Set(p+"type", f.Type)
		v.Set(p+"label_en", f.LabelEN)
		v.Set(p+"label_zh", f.LabelZH)
		v.Set(p+"options", f.Options)
		v.Set(p+"page", f.Page)
		v.Set(p+"show_field", f.ShowField)
		v.Set(p+"show_op", f.ShowOp)
		v.Set(p+"show_value", f.ShowValue)
		v.Set(p+"max", f.Max)
		if f.Required {
			v.Set(p+"required", "on")
		}
		if f.Prefill {
			v.Set(p+"prefill", "on")
		}
		for j, o := range f.OptionList(false) {
			v.Set(p+"placesv."+strconv.Itoa(j), o.Value)
			v.Set(p+"places."+strconv.Itoa(j), o.Places)
		}
	}
	v.Set("f3.places.1", "30")
	v.Set("f3.places.2", "5")
	v.Set("f4.show_op", "not")
	v.Set("f4.show_value", "eve")
	v.Set("f6.page", "3")
	posted := draftFromForm(v)
	posted.ID = "fair"
	_, base2, _ := readDraft([]byte(def), time.UTC)
	c := roundTrip(t, posted, base2)[0]
	opts := c.Def.Fields[3].Options
	if *opts[0].Capacity != 40 || *opts[1].Capacity != 30 || opts[2].Capacity == nil || *opts[2].Capacity != 5 {
		t.Errorf("places: %+v", opts)
	}
	if sh := c.Def.Fields[4].ShowIf; sh == nil || sh.Not == nil || *sh.Not != "eve" {
		t.Errorf("lunch's condition: %+v", sh)
	}
	if c.Def.Fields[5].ShowIf != nil || c.Def.Review || !c.Def.Fields[0].Prefill {
		t.Errorf("bus's condition %+v, review %v, prefill %v", c.Def.Fields[5].ShowIf, c.Def.Review, c.Def.Fields[0].Prefill)
	}
	if len(c.Def.Pages) != 3 || !slices.Equal(c.Def.Pages[0].Fields, []string{"age", "name", "guardian"}) ||
		!slices.Equal(c.Def.Pages[1].Fields, []string{"session", "lunch", "bus"}) || !slices.Equal(c.Def.Pages[2].Fields, []string{"note"}) ||
		c.Def.Pages[2].Title["zh"] != "更多" {
		t.Errorf("pages: %+v", c.Def.Pages)
	}
	// A step removed: its fields go to the step before it.
	posted.apply("removepage:2", "")
	if len(posted.Pages) != 2 || posted.Fields[6].Page != "2" {
		t.Errorf("after removing step 3: %d steps, note on %q", len(posted.Pages), posted.Fields[6].Page)
	}
	// No steps at all, then one added: every field people see is on it.
	posted.apply("removepage:0", "")
	posted.apply("removepage:0", "")
	posted.apply("addpage", "")
	if len(posted.Pages) != 1 || posted.Fields[0].Page != "1" || posted.Fields[7].Page != "" {
		t.Errorf("one step: %d, name on %q, the hidden field on %q", len(posted.Pages), posted.Fields[0].Page, posted.Fields[7].Page)
	}
	roundTrip(t, posted, nil)
}
