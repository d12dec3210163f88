package loadtest

import (
	"strings"
	"testing"

	"github.com/formd/formd/client"
	"github.com/formd/formd/internal/form"
)

func sessionRow(key, status, session string) exportRow {
	r := row(key, status)
	r.Data.Session = session
	return r
}

// A --sessions run's checker: no session above its places, and a full
// answer while the person's session had places is a violation; a full
// session beside one with places is not.
func TestVerdictWithSessions(t *testing.T) {
	t.Parallel()
	ss := sessionsOf(2, 3) // s1: 2 places, s2: 1
	if ss[0].Capacity != 2 || ss[1].Capacity != 1 {
		t.Fatalf("sessions %+v", ss)
	}
	for _, tc := range []struct {
		name                 string
		records              []*record
		rows                 []exportRow
		oversold, violations int
	}{
		{"each session full, the rest refused",
			[]*record{rec("p0", 0, client.Stored), rec("p1", 1, client.Stored), rec("p2", 2, client.Stored), rec("p3", 3, client.Full), rec("p4", 4, client.Full)},
			[]exportRow{sessionRow("p0", "stored", "s1"), sessionRow("p1", "stored", "s2"), sessionRow("p2", "stored", "s1"), sessionRow("p3", "rejected", "s2"), sessionRow("p4", "rejected", "s1")},
			0, 0},
		{"a session oversold though the total is not",
			[]*record{rec("p1", 1, client.Stored), rec("p3", 3, client.Stored)},
			[]exportRow{sessionRow("p1", "stored", "s2"), sessionRow("p3", "stored", "s2")},
			1, 0},
		{"full while the session had places",
			[]*record{rec("p0", 0, client.Full)},
			[]exportRow{sessionRow("p0", "rejected", "s1")},
			0, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := verdict(tc.records, tc.rows, 3, "reject", nil, ss...)
			if v.Oversold != tc.oversold || v.Violations != tc.violations {
				t.Fatalf("oversold %d, violations %d, want %d and %d (why %v)", v.Oversold, v.Violations, tc.oversold, tc.violations, v.Why)
			}
		})
	}
	// The run's form is valid, and its options have the places.
	fs, err := form.Parse([]byte(loadtestForm("lt", 3, "reject", ss...)), "lt.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if field, places := fs[0].PlaceField(); field != "session" || len(places) != 2 || *places[0].Capacity != 2 {
		t.Fatalf("place field %q %+v", field, places)
	}
	if b := string((person{name: "A", session: "s2"}).body(0)); !strings.Contains(b, `"session":"s2"`) {
		t.Fatalf("body %s", b)
	}
}
