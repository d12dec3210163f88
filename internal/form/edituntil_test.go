package form

import (
	"strings"
	"testing"
	"time"
)

// TestEditUntil: edit_until is a time (with its zone) or closes_at, and
// forms check says plainly what is wrong with any other value.
func TestEditUntil(t *testing.T) {
	t.Parallel()
	const head = "id: f\nfields:\n  - {name: email, type: email}\n"
	for _, tc := range []struct {
		name, yaml, wantErr string
		at                  time.Time
		editable            bool
	}{
		{"none", "", "", time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC), false},
		{"a time", "edit_until: 2030-05-01T18:00:00+08:00\n", "", time.Date(2030, 5, 1, 9, 59, 0, 0, time.UTC), true},
		{"the time passed", "edit_until: 2030-05-01T18:00:00+08:00\n", "", time.Date(2030, 5, 1, 10, 0, 0, 0, time.UTC), false},
		{"closes_at", "closes_at: 2030-06-01T00:00:00Z\nedit_until: closes_at\n", "", time.Date(2030, 5, 31, 0, 0, 0, 0, time.UTC), true},
		{"closes_at passed", "closes_at: 2030-06-01T00:00:00Z\nedit_until: closes_at\n", "", time.Date(2030, 6, 1, 0, 0, 0, 0, time.UTC), false},
		{"closes_at missing", "edit_until: closes_at\n", "edit_until is closes_at but the form has no closes_at", time.Time{}, false},
		{"no zone", "edit_until: 2030-05-01 18:00\n", `edit_until "2030-05-01 18:00" is not a time: write a time with its zone`, time.Time{}, false},
		{"a word", "edit_until: tomorrow\n", `edit_until "tomorrow" is not a time`, time.Time{}, false},
		{"before opening", "opens_at: 2030-05-01T00:00:00Z\nedit_until: 2030-04-01T00:00:00Z\n", "is not after opens_at", time.Time{}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fs, err := Parse([]byte(head+tc.yaml), "f.yaml")
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := fs[0].Def.EditableAt(tc.at); got != tc.editable {
				t.Fatalf("editable at %s: %v, want %v", tc.at, got, tc.editable)
			}
		})
	}
}
