package console

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

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
