package form

import (
	"encoding/json"
	"os"
	"slices"
	"strings"
	"testing"
)

// conditionVectors is testdata/conditions.json, which sdk/js's tests run
// too (test/conditions.test.js): one rule, two runtimes.
type conditionVectors struct {
	Cases []struct {
		Name   string         `json:"name"`
		Fields []Field        `json:"fields"`
		Values map[string]any `json:"values"`
		Shown  []string       `json:"shown"`
	} `json:"cases"`
}

func readConditionVectors(t *testing.T) conditionVectors {
	t.Helper()
	raw, err := os.ReadFile("testdata/conditions.json")
	if err != nil {
		t.Fatal(err)
	}
	var v conditionVectors
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatal(err)
	}
	if len(v.Cases) < 20 {
		t.Fatalf("%d condition vectors, want the whole file", len(v.Cases))
	}
	return v
}

// The evaluator on the shared vectors.
func TestConditionVectors(t *testing.T) {
	t.Parallel()
	for _, tc := range readConditionVectors(t).Cases {
		t.Run(tc.Name, func(t *testing.T) {
			shown := Shown(tc.Fields, func(name string) []string { return AnswerOf(tc.Values[name]) })
			var got []string
			for _, fd := range tc.Fields {
				if shown[fd.Name] {
					got = append(got, fd.Name)
				}
			}
			if !slices.Equal(got, tc.Shown) {
				t.Fatalf("shown %v, want %v", got, tc.Shown)
			}
		})
	}
}

// Validate applies the vectors as the server does: a field not shown is
// not required and its value is not stored but listed as ignored.
func TestValidateWithConditions(t *testing.T) {
	t.Parallel()
	f := mustForm(t, `
id: exam
fields:
  - {name: name, type: text, required: true}
  - {name: age_group, type: select, required: true, options: [adult, minor]}
  - name: guardian_phone
    type: phone
    region: CN
    required: true
    show_if: {field: age_group, equals: minor}
  - {name: guardian_sms, type: checkbox, show_if: {field: guardian_phone, answered: true}}
`)
	h := testHasher
	for _, tc := range []struct {
		name        string
		in          map[string]any
		wantErr     string
		wantData    string
		wantIgnored []string
	}{
		{"minor needs the guardian's phone", map[string]any{"name": "Li", "age_group": "minor"}, "guardian_phone: required", "", nil},
		{"minor with the phone", map[string]any{"name": "Li", "age_group": "minor", "guardian_phone": "13800138000", "guardian_sms": true}, "",
			`{"name":"Li","age_group":"minor","guardian_phone":"+8613800138000","guardian_sms":true}`, nil},
		{"adult without it", map[string]any{"name": "Wang", "age_group": "adult"}, "", `{"name":"Wang","age_group":"adult"}`, nil},
		{"adult sending it: ignored, and so is what depends on it", map[string]any{"name": "Wang", "age_group": "adult", "guardian_phone": "not a phone", "guardian_sms": true}, "",
			`{"name":"Wang","age_group":"adult","_ignored":["guardian_phone","guardian_sms"]}`, []string{"guardian_phone", "guardian_sms"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			acc, err := f.Validate(tc.in, h)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err %v, want %s", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if string(acc.Data) != tc.wantData || !slices.Equal(acc.Ignored, tc.wantIgnored) || !slices.Equal(IgnoredOf(acc.Data), tc.wantIgnored) {
				t.Fatalf("data %s ignored %v, want %s %v", acc.Data, acc.Ignored, tc.wantData, tc.wantIgnored)
			}
		})
	}
}
