package outbox_test

import (
	"context"
	"testing"
	"time"

	"github.com/formd/formd/internal/outbox"
	"github.com/formd/formd/internal/poll"
	"github.com/formd/formd/internal/store"
)

// TestCheckedInBodyHasTimeAndDoor: the submission.checked_in event's
// delivered body (signed, the Standard Webhooks envelope) carries the
// check-in's time and door; the entry's other events carry neither.
func TestCheckedInBodyHasTimeAndDoor(t *testing.T) {
	t.Parallel()
	r := newReceiver(t, nil)
	f := newFixture(t, hookForm(r.srv.URL, "")+"checkin: true\n", nil, outbox.Options{})
	f.run()
	outs := f.submit("fair", `{"name":"Ann"}`)
	res, err := f.st.CheckIn(context.Background(), store.Scan{Form: "fair", EntryID: outs[0].ID, Key: "scan-1", Door: "B", ScannedAt: time.Now().UTC()})
	if err != nil || res.Result != store.CheckedIn {
		t.Fatalf("check in: %+v %v", res, err)
	}
	f.d.Wake()
	poll.Until(t, "the stored and checked-in events", 15*time.Second, func() bool { return len(r.deliveries()) == 2 })
	for _, d := range r.deliveries() {
		data := d.body["data"].(map[string]any)
		switch d.typ {
		case store.EventCheckedIn:
			if d.id != "evt_"+outs[0].ID+"_checked_in" {
				t.Errorf("checked-in event id %q", d.id)
			}
			at, _ := time.Parse(time.RFC3339Nano, data["checked_in_at"].(string))
			if !at.Equal(res.At) || data["door"] != "B" || data["checked_in_at"] != d.body["timestamp"] || data["id"] != outs[0].ID {
				t.Errorf("checked-in body %v, want checked_in_at %s and door B", d.body, res.At)
			}
		case store.EventStored:
			if _, ok := data["checked_in_at"]; ok {
				t.Errorf("the stored event carries a check-in: %v", d.body)
			}
			if _, ok := data["door"]; ok {
				t.Errorf("the stored event carries a door: %v", d.body)
			}
		default:
			t.Errorf("an unexpected event %s", d.typ)
		}
	}
}
