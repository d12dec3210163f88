package intake

import (
	"github.com/formd/formd/internal/form"
	"github.com/formd/formd/internal/ticket"
)

// withTicket adds the ticket (package ticket) to what the participant's
// link shows, on a form with checkin: true and only while the entry may
// come in (stored): a waitlisted, pending, cancelled or declined entry
// shows none, and a promoted one shows it from its promotion on.
func withTicket(v EntryView, f *form.Form, h *form.Hasher) EntryView {
	if f == nil || !f.Def.Checkin || !ticket.Valid(v.Status) {
		return v
	}
	v.Ticket, v.TicketCode = ticket.Ticket(h, v.Form, v.ID), ticket.Code(h, v.Form, v.ID)
	return v
}
