package hosted

import (
	"html/template"

	"github.com/formd/formd/internal/intake"
	"github.com/formd/formd/internal/ticket"
)

// ticketBlock is the ticket on the participant's page: its QR code
// (inline SVG, so the page needs no image URL that would carry the
// ticket) and its short code.
type ticketBlock struct {
	QR   template.HTML
	Code string
}

// ticketView is the entry's ticket block, nil when it has no valid
// ticket (intake.EntryView.Ticket is set only then).
func ticketView(v intake.EntryView, l lang) *ticketBlock {
	if v.Ticket == "" {
		return nil
	}
	svg, err := ticket.SVG(v.Ticket, l.T["your-ticket"]+" "+v.TicketCode)
	if err != nil {
		return nil
	}
	return &ticketBlock{QR: template.HTML(svg), Code: v.TicketCode} //nolint:gosec // our own SVG, its one text attribute escaped
}
