package loadtest

import (
	"testing"

	"github.com/formd/formd/client"
)

// rec builds a record: key, person, and the calls' outcomes ("" for
// undecided; acked is set for every decided outcome the server journals).
func rec(key string, person int, outcomes ...client.Outcome) *record {
	r := &record{key: key, person: person}
	for _, o := range outcomes {
		r.calls = append(r.calls, call{outcome: o, acked: o != "" && o != client.Invalid})
	}
	return r
}

func invalidRec(key string, person int, o client.Outcome) *record {
	r := rec(key, person, o)
	r.invalid = true
	return r
}

func ackedOnly(key string, person int) *record {
	return &record{key: key, person: person, calls: []call{{acked: true}}}
}

func forgottenRec(key string, person int) *record {
	return &record{key: key, person: person, calls: []call{{outcome: client.Stored, acked: true, forgotten: true}}}
}

func row(key, status string) exportRow { return exportRow{Key: key, Status: status} }

// Each story is a small run: what the clients were told, what the store
// holds, and what the checker must conclude. A checker that cannot fail
// proves nothing, so most stories are failures.
func TestVerdict(t *testing.T) {
	t.Parallel()
	type want struct{ lost, duplicated, oversold, unresolved, violations, late int }
	tests := []struct {
		name     string
		records  []*record
		rows     []exportRow
		capacity int
		whenFull string
		final    statusOf
		want     want
		refused  Refusals
	}{
		{name: "clean run",
			records: []*record{rec("p1", 1, client.Stored), rec("p2", 2, client.Waitlisted)},
			rows:    []exportRow{row("p1", "stored"), row("p2", "waitlisted")}, capacity: 1},
		{name: "a waitlisted person is registered, not lost",
			records: []*record{rec("p1", 1, client.Waitlisted)}, rows: []exportRow{row("p1", "waitlisted")}, capacity: 1},
		{name: "409 because the person's own other key won is not lost",
			records: []*record{rec("p1", 1, client.Stored), rec("p1-again", 1, client.AlreadyRegistered)},
			rows:    []exportRow{row("p1", "stored"), row("p1-again", "duplicate")}, capacity: 5,
			refused: Refusals{AlreadyRegistered: 1}},
		{name: "the second key won the race: still one person, nothing lost",
			records: []*record{rec("p1", 1, client.AlreadyRegistered), rec("p1-again", 1, client.Stored)},
			rows:    []exportRow{row("p1", "duplicate"), row("p1-again", "stored")}, capacity: 5,
			refused: Refusals{AlreadyRegistered: 1}},
		{name: "a double click answered the same twice",
			records: []*record{rec("p1", 1, client.Stored, client.Stored)}, rows: []exportRow{row("p1", "stored")}, capacity: 5},
		{name: "invalid input refused",
			records: []*record{invalidRec("bad1", 1, client.Invalid)}, capacity: 5, refused: Refusals{Invalid: 1}},
		{name: "full, rejected, as promised",
			records: []*record{rec("p1", 1, client.Stored), rec("p2", 2, client.Full)},
			rows:    []exportRow{row("p1", "stored"), row("p2", "rejected")}, capacity: 1, whenFull: "reject",
			refused: Refusals{Full: 1}},

		{name: "answered stored, missing from the store",
			records: []*record{rec("p1", 1, client.Stored)}, capacity: 5, want: want{lost: 1}},
		{name: "answered stored, stored as a duplicate",
			records: []*record{rec("p1", 1, client.Stored)}, rows: []exportRow{row("p1", "duplicate")}, capacity: 5, want: want{lost: 1}},
		{name: "both keys of a person refused as duplicates",
			records: []*record{rec("p1", 1, client.AlreadyRegistered), rec("p1-again", 1, client.AlreadyRegistered)},
			rows:    []exportRow{row("p1", "duplicate"), row("p1-again", "duplicate")}, capacity: 5, want: want{lost: 2}},
		{name: "acknowledged, then forgotten by the server",
			records: []*record{forgottenRec("p1", 1)}, rows: []exportRow{row("p1", "stored")}, capacity: 5, want: want{lost: 1}},
		{name: "acknowledged, undecided, gone from store and journal",
			records: []*record{ackedOnly("p1", 1)}, final: statusOf{"p1": finalNotFound}, capacity: 5, want: want{lost: 1}},
		{name: "acknowledged, undecided, still processing",
			records: []*record{ackedOnly("p1", 1)}, final: statusOf{"p1": finalProcessing}, capacity: 5, want: want{unresolved: 1}},
		{name: "acknowledged, client gave up, the store decided it",
			records: []*record{ackedOnly("p1", 1)}, rows: []exportRow{row("p1", "stored")}, capacity: 5, want: want{late: 1}},
		{name: "never acknowledged, never stored",
			records: []*record{rec("p1", 1, "")}, capacity: 5, want: want{unresolved: 1}},
		{name: "dead-lettered",
			records: []*record{ackedOnly("p1", 1)}, rows: []exportRow{row("p1", "dead-lettered")}, capacity: 5, want: want{unresolved: 1}},

		{name: "two entries for one key",
			records: []*record{rec("p1", 1, client.Stored)}, rows: []exportRow{row("p1", "stored"), row("p1", "stored")}, capacity: 5,
			want: want{duplicated: 2}}, // one extra for the key, one extra live entry for the person
		{name: "one person live twice under two keys",
			records: []*record{rec("p1", 1, client.Stored), rec("p1-again", 1, client.Waitlisted)},
			rows:    []exportRow{row("p1", "stored"), row("p1-again", "waitlisted")}, capacity: 5, want: want{duplicated: 1}},
		{name: "stored beyond capacity",
			records: []*record{rec("p1", 1, client.Stored), rec("p2", 2, client.Stored), rec("p3", 3, client.Stored)},
			rows:    []exportRow{row("p1", "stored"), row("p2", "stored"), row("p3", "stored")}, capacity: 2, want: want{oversold: 1}},

		{name: "invalid input stored",
			records: []*record{invalidRec("bad1", 1, client.Invalid)}, rows: []exportRow{row("bad1", "stored")}, capacity: 5,
			want: want{violations: 1}, refused: Refusals{Invalid: 1}},
		{name: "invalid input accepted",
			records: []*record{invalidRec("bad1", 1, client.Stored)}, capacity: 5, want: want{violations: 1}},
		{name: "a double click answered two ways",
			records: []*record{rec("p1", 1, client.Stored, client.AlreadyRegistered)}, rows: []exportRow{row("p1", "stored")}, capacity: 5,
			want: want{violations: 1}},
		{name: "answered already-registered, stored all the same",
			records: []*record{rec("p1", 1, client.AlreadyRegistered)}, rows: []exportRow{row("p1", "stored")}, capacity: 5,
			want: want{violations: 1}, refused: Refusals{AlreadyRegistered: 1}},
		{name: "an entry no client sent",
			records: []*record{rec("p1", 1, client.Stored)}, rows: []exportRow{row("p1", "stored"), row("ghost", "stored")}, capacity: 5,
			want: want{violations: 1}},
		{name: "a valid registration refused as invalid",
			records: []*record{rec("p1", 1, client.Invalid)}, capacity: 5, want: want{violations: 1}},
		{name: "full while places were free",
			records: []*record{rec("p1", 1, client.Full)}, rows: []exportRow{row("p1", "rejected")}, capacity: 5, whenFull: "reject",
			want: want{violations: 1}, refused: Refusals{Full: 1}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if tc.whenFull == "" {
				tc.whenFull = "waitlist"
			}
			v := verdict(tc.records, tc.rows, tc.capacity, tc.whenFull, tc.final)
			got := want{v.Lost, v.Duplicated, v.Oversold, v.Unresolved, v.Violations, v.Late}
			if got != tc.want {
				t.Errorf("got %+v, want %+v (why: %v)", got, tc.want, v.Why)
			}
			if v.Refused != tc.refused {
				t.Errorf("refusals %+v, want %+v", v.Refused, tc.refused)
			}
			if (got != want{} && got.late == 0) != (len(v.Why) > 0) {
				t.Errorf("failures without reasons, or reasons without failures: %v", v.Why)
			}
		})
	}
}
