package outbox

import (
	"slices"
	"testing"

	"github.com/formd/formd/internal/form"
	"github.com/formd/formd/internal/store"
)

// On a form with review the owner hears of each pending entry, the
// person of the decision (approved, declined), and a webhook that names
// no events gets all three.
func TestReviewEventsEndpoints(t *testing.T) {
	t.Parallel()
	hook := form.Webhook{URL: "https://crm.example.org/hook"}
	blocks := []*form.Notify{{Webhooks: []form.Webhook{hook}, Email: &form.EmailSetup{To: []string{"owner@example.org"}, Confirm: "email"}}, nil}
	d := New(nil, nil, nil, nil, Options{})
	for _, tc := range []struct {
		typ  string
		want []string
	}{
		{store.EventPending, []string{hook.Endpoint(), endpointOwner}},
		{store.EventApproved, []string{hook.Endpoint(), endpointConfirm}},
		{store.EventDeclined, []string{hook.Endpoint(), endpointConfirm}},
	} {
		if got := d.endpoints(blocks, tc.typ); !slices.Equal(got, tc.want) {
			t.Errorf("%s: %v, want %v", tc.typ, got, tc.want)
		}
	}
	if w := statusWord(store.Event{Type: store.EventApproved, Status: store.StatusStored}); w != "approved" {
		t.Errorf("an approval's mail says %q", w)
	}
}
