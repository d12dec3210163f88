package storetest

import (
	"testing"

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
