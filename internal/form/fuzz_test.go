package form

import (
	"bytes"
	"encoding/json"
	"testing"
)

// FuzzValidate feeds arbitrary JSON submissions to a form with every field
// type. It must never panic; what it accepts must be valid JSON, and
// normalization must be idempotent: validating the normalized data again
// gives the same data, fingerprint and claims.
func FuzzValidate(f *testing.F) {
	forms, err := Parse([]byte(fairYAML), "")
	if err != nil {
		f.Fatal(err)
	}
	form := forms[0]
	f.Add([]byte(`{"name":"Ann","phone":"+86 138 0013 8000","consent":true,"tickets":2,"extras":["lunch"],"day":"2027-03-02"}`))
	f.Add([]byte(`{"name":"  Ｂｏ\u0301 ","phone":"13800138000","consent":"on","email":"A@B.CO","slot":"morning"}`))
	f.Add([]byte(`{"name":"x","phone":"1","consent":1,"tickets":"1e3"}`))
	f.Add([]byte(`{"name":["a","b"],"phone":null,"consent":[true]}`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.UseNumber()
		var in map[string]any
		if dec.Decode(&in) != nil {
			return
		}
		acc, err := form.Validate(in)
		if err != nil {
			return
		}
		if !json.Valid(acc.Data) {
			t.Fatalf("normalized data is not JSON: %s", acc.Data)
		}
		dec = json.NewDecoder(bytes.NewReader(acc.Data))
		dec.UseNumber()
		var again map[string]any
		if err := dec.Decode(&again); err != nil {
			t.Fatal(err)
		}
		acc2, err := form.Validate(again)
		if err != nil {
			t.Fatalf("normalized data %s does not validate: %v", acc.Data, err)
		}
		if !bytes.Equal(acc.Data, acc2.Data) || acc.Fingerprint != acc2.Fingerprint || len(acc.Claims) != len(acc2.Claims) {
			t.Fatalf("normalization is not idempotent:\n%s\n%s", acc.Data, acc2.Data)
		}
		for i := range acc.Claims {
			if acc.Claims[i] != acc2.Claims[i] {
				t.Fatalf("claims differ after normalizing again")
			}
		}
	})
}
