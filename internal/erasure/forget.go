package erasure

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/formd/formd/internal/form"
	"github.com/formd/formd/internal/journal"
	"github.com/formd/formd/internal/store"
)

// Person names whom to forget: an e-mail address or a phone number (with
// the region its national form is written for), compared as formd stores
// them (normalized: an address lower-cased, a number in E.164).
type Person struct {
	Email  string
	Phone  string
	Region string
}

// InputError says the person was not named in a way formd can search
// for; the message says what would be valid.
type InputError struct{ msg string }

func (e *InputError) Error() string { return e.msg }

func inputErr(format string, args ...any) error { return &InputError{fmt.Sprintf(format, args...)} }

// needles are the byte strings an entry's data holds when it holds the
// person's address or number: the JSON string of the normalized value
// (and, for a number, the same number with an extension).
func (p Person) needles() ([][]byte, string, error) {
	switch {
	case p.Email != "" && p.Phone != "":
		return nil, "", inputErr("name one person: an e-mail address or a phone number, not both")
	case p.Email != "":
		e, err := form.NormalizeEmail(p.Email)
		if err != nil {
			return nil, "", inputErr("the e-mail %s", err)
		}
		return [][]byte{form.JSONString(e)}, "an e-mail address", nil
	case p.Phone != "":
		n, err := form.NormalizePhone(p.Phone, p.Region)
		if err != nil {
			return nil, "", inputErr("the phone number %s (give it with + and its country code, or its region such as CN)", err)
		}
		if i := strings.Index(n, ";ext="); i >= 0 {
			// An extension names one line of a switchboard: forget that one.
			return [][]byte{form.JSONString(n)}, "a phone number", nil
		}
		q := form.JSONString(n)
		withExt := append(slices.Clone(q[:len(q)-1]), ";ext="...)
		return [][]byte{q, withExt}, "a phone number", nil
	}
	return nil, "", inputErr("name the person: an e-mail address or a phone number")
}

// Finder is the part of the store Forget uses.
type Finder interface {
	FindEntries(ctx context.Context, needles [][]byte, limit int) ([]store.EntryRef, error)
	// EraseEntries erases entries; for the forms in tell it writes the
	// notice of each request it grants (store.Store.EraseEntries).
	EraseEntries(ctx context.Context, ids []string, tell store.NoticeFields) (int, error)
	// EntryUploads lists an entry's files (none once it is erased).
	EntryUploads(ctx context.Context, entryID string) ([]store.Upload, error)
	// FindDrafts and EraseDrafts find and delete drafts (store.Drafts).
	FindDrafts(ctx context.Context, needles [][]byte, limit int) ([]store.DraftRef, error)
	EraseDrafts(ctx context.Context, refs []store.DraftRef) (int, error)
}

// Report is what Forget found and did.
type Report struct {
	// What says what identified the person, without the value itself
	// (for the audit log: it must not keep what was erased).
	What string
	// Entries are those that held the person's address or number.
	Entries []store.EntryRef
	// Erased is how many had their data erased now (0 in a dry run).
	Erased int
	// Files counts the files of the entries erased now (in a dry run, of
	// those that would be): from the moment the erasure commits no link
	// serves them, and the server's next pass deletes their bytes.
	Files int
	// Pending lists entries whose journal copy could not be deleted yet
	// (not yet decided): they are left whole, and running Forget again
	// once they are decided erases them.
	Pending []store.EntryRef
	// JournalKept says the journal cannot delete copies (a driver without
	// journal.Forgetter); they stay until its own limits remove them.
	JournalKept bool
	// Drafts is how many saved drafts (on the sites allowed) held the
	// value: deleted, unless in a dry run.
	Drafts int
}

// Detail says what was erased for the audit log: the entries by form and
// id, never the value that identified the person.
func (r Report) Detail() string {
	var b strings.Builder
	fmt.Fprintf(&b, "erased %d of %d entries", r.Erased, len(r.Entries))
	if r.Drafts > 0 {
		fmt.Fprintf(&b, " and %d drafts", r.Drafts)
	}
	for _, e := range r.Entries {
		fmt.Fprintf(&b, "; %s/%s", e.Form, e.ID)
	}
	if len(r.Pending) > 0 {
		fmt.Fprintf(&b, "; %d still being processed", len(r.Pending))
	}
	return b.String()
}

// Forms counts the entries per form, for a summary.
func (r Report) Forms() map[string]int {
	out := map[string]int{}
	for _, e := range r.Entries {
		out[e.Form]++
	}
	return out
}

// maxForget bounds one call: a person has a handful of entries; thousands
// mean the value is not one person's (a shared office number).
const maxForget = 1000

// Forget erases every entry, across forms, whose data holds the person's
// e-mail address or phone number, on the sites allow accepts (nil: every
// site): the store's data and claims, and the journal's copy where the
// journal can delete it (fg nil when it cannot). With dryRun it only lists
// them.
func Forget(ctx context.Context, st Finder, fg journal.Forgetter, p Person, allow func(site string) bool, dryRun bool) (Report, error) {
	needles, what, err := p.needles()
	if err != nil {
		return Report{}, err
	}
	r := Report{What: what, JournalKept: fg == nil}
	found, err := st.FindEntries(ctx, needles, maxForget+1)
	if err != nil {
		return r, fmt.Errorf("find the person's entries: %w", err)
	}
	if len(found) > maxForget {
		return r, inputErr("more than %d entries hold this value: it is not one person's", maxForget)
	}
	for _, e := range found {
		if allow == nil || allow(e.Site) {
			r.Entries = append(r.Entries, e)
		}
	}
	found = r.Entries
	drafts, err := st.FindDrafts(ctx, needles, maxForget+1)
	if err != nil {
		return r, fmt.Errorf("find the person's drafts: %w", err)
	}
	if len(drafts) > maxForget {
		return r, inputErr("more than %d drafts hold this value: it is not one person's", maxForget)
	}
	drafts = slices.DeleteFunc(drafts, func(d store.DraftRef) bool { return allow != nil && !allow(d.Site) })
	r.Drafts = len(drafts)
	if dryRun {
		// What would go: the entries' files are counted, nothing erased.
		n, err := countFiles(ctx, st, found)
		r.Files = n
		return r, err
	}
	// Drafts are not journaled: deleting them from the store is all.
	if r.Drafts, err = st.EraseDrafts(ctx, drafts); err != nil {
		return r, fmt.Errorf("erase the person's drafts: %w", err)
	}
	// A person forgotten by value is not told: this erasure is the
	// organizer's, not the answer to a request (ForgetEntries is).
	err = eraseFound(ctx, st, fg, found, nil, &r)
	return r, err
}

// ForgetEntries erases the entries named — a participant's request,
// granted by the organizer or at once by self_erase — as Forget erases
// a person's: the journal's copies first, then the store's data, claims,
// history and files; r.Pending lists those still being decided. Each
// entry of a form in tell whose request the erasure grants gets, in the
// erasure's transaction, the event of the e-mail telling the person it
// is done (store.EventErased).
func ForgetEntries(ctx context.Context, st Finder, fg journal.Forgetter, entries []store.EntryRef, tell store.NoticeFields) (Report, error) {
	r := Report{What: "a participant's request", JournalKept: fg == nil, Entries: entries}
	err := eraseFound(ctx, st, fg, entries, tell, &r)
	return r, err
}

// eraseFound erases the entries found, recording what it did in r.
func eraseFound(ctx context.Context, st Finder, fg journal.Forgetter, found []store.EntryRef, tell store.NoticeFields, r *Report) error {
	if len(found) == 0 {
		return nil
	}
	// The journal's copies go first: an entry whose copy stays while the
	// store forgets it would only be replayed as a replay (the store keeps
	// its key), but a copy is data all the same.
	if fg != nil {
		for _, e := range found {
			err := fg.Forget(ctx, e.Form, e.Key)
			switch {
			case errors.Is(err, journal.ErrPending):
				r.Pending = append(r.Pending, e)
			case err != nil:
				return fmt.Errorf("delete the journal's copy of %s/%s: %w", e.Form, e.ID, err)
			}
		}
	}
	var ids []string
	var erasing []store.EntryRef
	for _, e := range found {
		if !slices.ContainsFunc(r.Pending, func(p store.EntryRef) bool { return p.ID == e.ID }) {
			ids = append(ids, e.ID)
			erasing = append(erasing, e)
		}
	}
	// Counted before: an erased entry lists no files.
	files, err := countFiles(ctx, st, erasing)
	if err != nil {
		return err
	}
	if r.Erased, err = st.EraseEntries(ctx, ids, tell); err != nil {
		return fmt.Errorf("erase the person's entries: %w", err)
	}
	if r.Erased > 0 {
		r.Files = files
	}
	return nil
}

// countFiles counts the files of the entries.
func countFiles(ctx context.Context, st Finder, es []store.EntryRef) (int, error) {
	n := 0
	for _, e := range es {
		ups, err := st.EntryUploads(ctx, e.ID)
		if err != nil {
			return 0, fmt.Errorf("list the files of %s/%s: %w", e.Form, e.ID, err)
		}
		n += len(ups)
	}
	return n, nil
}
