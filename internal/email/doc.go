// Package email writes and sends formd's e-mail: the owner's mail about
// each entry (or a digest of a form's entries when many arrive at once)
// and the confirmation a person gets with their receipt.
//
// It has three parts, each usable alone:
//
//   - Settings. ParseURL reads --smtp (FORMD_SMTP), such as
//     smtp://user:password@mail.example.org:587, and ParseFrom reads
//     --smtp-from. Both are meant to run once at start-up: their errors
//     name the setting, say what is wrong, show a valid example and never
//     repeat the password. A Config prints itself redacted.
//
//   - Sending. A Mailer hands one Message to the SMTP server per Send,
//     through github.com/wneessen/go-mail, over a pool of SMTP sessions
//     (many messages a connection with RSET between them, at most
//     Options.MaxConns open, a connection the server closed replaced, idle
//     ones closed after Options.IdleTimeout): with smtp:// the connection
//     upgrades with STARTTLS when the
//     server offers it, with smtps:// it is TLS from the first byte, and a
//     password is only ever sent over TLS (or to a server on loopback).
//     Send is bounded by its ctx. Its errors say whether retrying can
//     help (IsPermanent): a 5xx reply or a refused recipient cannot, a
//     dropped connection, a timeout or a 4xx reply can.
//
//   - Writing. Render makes a mail's subject, plain-text body and HTML
//     body, in Chinese or English, from a view (EntryView, DigestView,
//     ConfirmationView) that the caller fills from the entry. The
//     templates are embedded; the HTML escapes every value, so that what
//     a stranger typed into a form cannot become markup in the owner's
//     mail.
//
// Delivery is at least once, as for webhooks: the outbox dispatcher calls
// Send until it succeeds, a permanent error dead-letters the row, and the
// caller gives every Message a Message-ID that is stable for one event
// and recipient, so that a mail delivered twice (after a connection lost
// at the last moment) is recognisably the same mail.
//
// The package does not decide when to send: choosing a digest over single
// mails when more than N entries of a form arrive in a minute, and
// retrying, belong to the outbox dispatcher, which holds the state they
// need. It imports no other formd package, so that the dispatcher can be
// tested with a fake sender and this package with a real SMTP server.
//
// A confirmation goes to an address the person typed, with what they
// typed: it is sent only for real entries (Render refuses statuses such
// as spam), ends with a line telling a recipient who did not fill the
// form to ignore it, and its HTML links nothing the person wrote.
package email
