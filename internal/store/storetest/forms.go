package storetest

import (
	"errors"
	"testing"
	"time"

	"github.com/formd/formd/internal/form"
	"github.com/formd/formd/internal/store"
)

// Forms, their versions and their settings.

// testSettings: the first value stored under a name wins.
func testSettings(t *testing.T, s store.Store) {
	got, err := s.PutSetting(ctxT(t), "x", []byte("one"))
	if err != nil || string(got) != "one" {
		t.Fatalf("first put: %q %v", got, err)
	}
	got, err = s.PutSetting(ctxT(t), "x", []byte("two"))
	if err != nil || string(got) != "one" {
		t.Fatalf("second put: %q %v, want the first value kept", got, err)
	}
}

func testForms(t *testing.T, s store.Store) {
	ctx := ctxT(t)
	forms, v0, err := s.Forms(ctx, 0)
	if err != nil || len(forms) != 0 {
		t.Fatalf("empty store forms: %v %v", forms, err)
	}
	putForm(t, s, "a", intp(3), store.StatusWaitlisted)
	putForm(t, s, "b", nil, "")
	forms, v1, err := s.Forms(ctx, v0)
	if err != nil || len(forms) != 2 || v1 <= v0 {
		t.Fatalf("forms %+v version %d→%d: %v", forms, v0, v1, err)
	}
	if forms[0].ID != "a" || *forms[0].Capacity != 3 || forms[0].WhenFull != "waitlist" || string(forms[0].Source) != "id: a" || forms[1].Capacity != nil {
		t.Fatalf("forms %+v", forms)
	}
	if again, v, err := s.Forms(ctx, v1); err != nil || len(again) != 0 || v != v1 {
		t.Fatalf("nothing changed since %d: %+v %d %v", v1, again, v, err)
	}
	putForm(t, s, "b", intp(1), "")
	changed, v2, err := s.Forms(ctx, v1)
	if err != nil || len(changed) != 1 || changed[0].ID != "b" || v2 <= v1 {
		t.Fatalf("changed %+v %d %v", changed, v2, err)
	}
}

// testFormHistory: every definition published is its form's next
// version, numbered from 1 per form, with who, how and what changed;
// PutForms counts as a version by no one; a missing version is
// ErrVersionNotFound; archiving twice keeps the first time, and
// unarchiving removes it.
func testFormHistory(t *testing.T, s store.Store) {
	ctx := ctxT(t)
	if vs, err := s.FormVersions(ctx, "h"); err != nil || len(vs) != 0 {
		t.Fatalf("versions of no form: %+v %v", vs, err)
	}
	putForm(t, s, "h", nil, "")
	note := store.FormNote{By: "ann@example.org", Action: "form.rollback", Summary: map[string]string{"h": "Places: no limit → 5", "g": "A new form."}}
	if err := s.PublishForms(ctx, []form.Record{{ID: "h", Site: "s", Source: []byte("id: h\ncapacity: 5")}, {ID: "g", Site: "s", Source: []byte("id: g")}}, note); err != nil {
		t.Fatal(err)
	}
	vs, err := s.FormVersions(ctx, "h")
	if err != nil || len(vs) != 2 {
		t.Fatalf("versions of h: %+v %v", vs, err)
	}
	if vs[0].N != 2 || vs[0].By != "ann@example.org" || vs[0].Action != "form.rollback" || vs[0].Summary != "Places: no limit → 5" || vs[0].Site != "s" || vs[0].Source != nil || vs[0].SavedAt.IsZero() {
		t.Errorf("newest version of h: %+v", vs[0])
	}
	if vs[1].N != 1 || vs[1].By != "" || vs[1].Action != "forms.apply" {
		t.Errorf("first version of h (PutForms): %+v", vs[1])
	}
	v, err := s.FormVersion(ctx, "h", 2)
	if err != nil || string(v.Source) != "id: h\ncapacity: 5" {
		t.Fatalf("version 2 of h: %+v %v", v, err)
	}
	if g, err := s.FormVersions(ctx, "g"); err != nil || len(g) != 1 || g[0].N != 1 || g[0].Summary != "A new form." {
		t.Fatalf("versions of g, numbered on their own: %+v %v", g, err)
	}
	if _, err := s.FormVersion(ctx, "h", 3); !errors.Is(err, store.ErrVersionNotFound) {
		t.Fatalf("version 3 of h: %v, want ErrVersionNotFound", err)
	}
	first := time.Date(2027, 3, 1, 9, 0, 0, 0, time.UTC)
	if err := s.SetArchive(ctx, "h", &store.Archive{At: first, By: "ann@example.org"}); err != nil {
		t.Fatal(err)
	}
	if err := s.SetArchive(ctx, "h", &store.Archive{At: first.Add(time.Hour), By: "bo@example.org"}); err != nil {
		t.Fatal(err)
	}
	arch, err := s.Archives(ctx)
	if err != nil || len(arch) != 1 || !arch["h"].At.Equal(first) || arch["h"].By != "ann@example.org" {
		t.Fatalf("archives: %+v %v", arch, err)
	}
	if err := s.SetArchive(ctx, "h", nil); err != nil {
		t.Fatal(err)
	}
	if arch, err := s.Archives(ctx); err != nil || len(arch) != 0 {
		t.Fatalf("archives after unarchiving: %+v %v", arch, err)
	}

	// Drafts: one per form, the last saved replacing the one before.
	if _, ok, err := s.FormDraft(ctx, "new"); ok || err != nil {
		t.Fatalf("a draft of no form: %v %v", ok, err)
	}
	for _, src := range []string{"id: new\nsite: s", "id: new\nsite: t\ntitle: Fair"} {
		if err := s.PutFormDraft(ctx, store.FormDraft{Form: "new", Site: src[len(src)-1:], Source: []byte(src), SavedAt: first, By: "ann@example.org"}); err != nil {
			t.Fatal(err)
		}
	}
	d, ok, err := s.FormDraft(ctx, "new")
	if err != nil || !ok || string(d.Source) != "id: new\nsite: t\ntitle: Fair" || !d.SavedAt.Equal(first) || d.By != "ann@example.org" {
		t.Fatalf("the draft: %+v %v %v", d, ok, err)
	}
	if ds, err := s.FormDrafts(ctx); err != nil || len(ds) != 1 || ds[0].Form != "new" || ds[0].Source != nil {
		t.Fatalf("drafts: %+v %v", ds, err)
	}
	if err := s.DeleteFormDraft(ctx, "new"); err != nil {
		t.Fatal(err)
	}
	if ds, err := s.FormDrafts(ctx); err != nil || len(ds) != 0 {
		t.Fatalf("drafts after deleting: %+v %v", ds, err)
	}

	// Deleting: a form with an entry stays whole; an empty one goes,
	// with its versions, leaving a tombstone under a new forms version.
	putForm(t, s, "full", nil, "")
	mustApply(t, s, sub("full", "k1", 1))
	if ok, err := s.DeleteEmptyForm(ctx, "full"); ok || err != nil {
		t.Fatalf("delete a form with an entry: %v %v", ok, err)
	}
	if vs, err := s.FormVersions(ctx, "full"); err != nil || len(vs) != 1 {
		t.Fatalf("the refused delete changed the form's versions: %+v %v", vs, err)
	}
	_, before, err := s.Forms(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	if ok, err := s.DeleteEmptyForm(ctx, "g"); !ok || err != nil {
		t.Fatalf("delete an empty form: %v %v", ok, err)
	}
	changed, after, err := s.Forms(ctx, before)
	if err != nil || after <= before || len(changed) != 1 || changed[0].ID != "g" || len(changed[0].Source) != 0 {
		t.Fatalf("the tombstone: %+v %d→%d %v", changed, before, after, err)
	}
	if vs, err := s.FormVersions(ctx, "g"); err != nil || len(vs) != 0 {
		t.Fatalf("versions of the deleted form: %+v %v", vs, err)
	}
	if caps, err := s.Capacities(ctx); err != nil || caps["g"].Limit != nil || caps["g"].Taken != 0 || len(caps["g"].Options) != 0 {
		t.Fatalf("places of the deleted form: %+v %v", caps["g"], err)
	}

	// Creating claims the id in the database: a form's id is refused,
	// nothing of the set published; a deleted form's id is free.
	create := store.FormNote{Create: true, Action: "form.create"}
	err = s.PublishForms(ctx, []form.Record{{ID: "fresh", Site: "s", Source: []byte("id: fresh")}, {ID: "full", Site: "s", Source: []byte("id: full\ntitle: Other")}}, create)
	if !errors.Is(err, store.ErrFormExists) {
		t.Fatalf("create over a form: %v, want ErrFormExists", err)
	}
	if vs, err := s.FormVersions(ctx, "fresh"); err != nil || len(vs) != 0 {
		t.Fatalf("the refused create published fresh: %+v %v", vs, err)
	}
	if err := s.PublishForms(ctx, []form.Record{{ID: "g", Site: "s", Source: []byte("id: g\ntitle: Again")}}, create); err != nil {
		t.Fatalf("create under a deleted form's id: %v", err)
	}
	if vs, err := s.FormVersions(ctx, "g"); err != nil || len(vs) != 1 || vs[0].Action != "form.create" {
		t.Fatalf("versions of the new g: %+v %v", vs, err)
	}
}
