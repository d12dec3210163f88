package form

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/nyaruka/phonenumbers"
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
		acc, err := form.Validate(in, testHasher)
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
		// Fields the form does not define come back as they were sent.
		if extra, ok := again[ExtraKey].(map[string]any); ok {
			delete(again, ExtraKey)
			for k, v := range extra {
				again[k] = v
			}
		}
		acc2, err := form.Validate(again, testHasher)
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

// FuzzPhoneFastPath: whenever the fast path takes an input and finds it
// valid, libphonenumber's general parser must find it valid too, with the
// same E.164.
func FuzzPhoneFastPath(f *testing.F) {
	regions := []string{"", "CN", "US", "GB", "ES", "DE", "IT", "FR", "JP", "IN", "BR", "RU", "AU", "MX", "AR", "CA", "KR", "HK", "TW", "SG"}
	for i, s := range []string{"+86 139 1234 5678", "+1 (415) 555-0100", "+44 20 7946 0958", "+39 06 1234 5678", "+7 912 345-67-89",
		"+8613912345678", "+1-800-FLOWERS", "+999 123", "+86 139 1234 5678 ext 12", "+352 12 34", "+1 242 357 1234",
		"139 1234 5678", "8613912345678", "0086 139 1234 5678", "415 555 0100", "1 415 555 0100", "020 7946 0958", "612 34 56 78",
		"17912345678", "11 98765 4321", "9123456789"} {
		f.Add(s, uint8(i))
	}
	f.Fuzz(func(t *testing.T, s string, r uint8) {
		region := regions[int(r)%len(regions)]
		cc, nn, ok := parseCommon(s, region)
		if !ok {
			return // the general parser decides these
		}
		c32 := int32(cc)
		split := &phonenumbers.PhoneNumber{CountryCode: &c32, NationalNumber: &nn}
		if got, want := validNumber(cc, nn), phonenumbers.IsValidNumber(split); got != want {
			t.Fatalf("%q in %s: compiled patterns say valid=%v, libphonenumber %v", s, region, got, want)
		}
		if !validNumber(cc, nn) {
			return
		}
		reg := region
		if reg == "" {
			reg = "ZZ"
		}
		full, err := phonenumbers.Parse(s, reg)
		if err != nil {
			t.Fatalf("%q in %s: the fast path finds a valid number, the parser refuses it: %v", s, reg, err)
		}
		if !phonenumbers.IsValidNumber(full) {
			t.Fatalf("%q in %s: the fast path finds a valid number, the parser an invalid one", s, reg)
		}
		if a, b := phonenumbers.Format(split, phonenumbers.E164), phonenumbers.Format(full, phonenumbers.E164); a != b {
			t.Fatalf("%q in %s: fast path %s, parser %s", s, reg, a, b)
		}
	})
}
