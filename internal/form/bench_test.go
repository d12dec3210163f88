package form

import (
	"encoding/json"
	"fmt"
	"testing"
)

// BenchmarkValidate measures validating and normalizing one registration
// (text, phone, number) as the intake does for every submission.
func BenchmarkValidate(b *testing.B) {
	forms, err := Parse([]byte(`
id: bench
fields:
  - {name: name,    type: text,   required: true, max: 100}
  - {name: phone,   type: phone,  required: true, region: CN}
  - {name: tickets, type: number, min: 1, max: 4, integer: true}
unique: [[phone]]
`), "")
	if err != nil {
		b.Fatal(err)
	}
	f := forms[0]
	b.ReportAllocs()
	for i := range b.N {
		in := map[string]any{"name": "Person 1234", "phone": fmt.Sprintf("+86 139%08d", i%100000000), "tickets": json.Number("1")}
		if _, err := f.Validate(in, testHasher); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkNormalizePhone isolates the phone number: libphonenumber's
// parsing and validation are regular-expression heavy.
func BenchmarkNormalizePhone(b *testing.B) {
	for _, tc := range []struct{ name, in, region string }{
		{"e164-spaced", "+86 139 1234 5678", "CN"},
		{"national", "13912345678", "CN"},
		{"no-region", "+34 612 34 56 78", ""},
	} {
		b.Run(tc.name, func(b *testing.B) {
			b.ReportAllocs()
			for range b.N {
				if _, fe := normalizePhone(tc.in, tc.region); fe != nil {
					b.Fatal(fe.Message)
				}
			}
		})
	}
}
