package outbox

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/formd/formd/internal/export"
	"github.com/formd/formd/internal/store"
)

// eventJSON is an event as a webhook carries it, a format receivers
// depend on:
// {"type","timestamp","data":{"id","form","site","key","status",
// "received_at","receipt","data":{…}}}, with the fields the form does not
// define under "extra"; a submission.checked_in event's data adds
// "checked_in_at" (the event's own time: the check-in and its event are
// written by one transaction at one instant) and "door" (the door of the
// entry's check-in of that instant; absent if it was undone before the
// event was rendered). The same event always has the same body, so a
// retry is the same message — but for the links to an entry's files
// (each file field is {name, type, size, sha256, url}), which are signed
// afresh at each attempt so that they work when it arrives.
type eventJSON struct {
	Type      string    `json:"type"`
	Timestamp string    `json:"timestamp"`
	Data      entryJSON `json:"data"`
}

type entryJSON struct {
	ID         string          `json:"id"`
	Form       string          `json:"form"`
	Site       string          `json:"site"`
	Key        string          `json:"key"`
	Status     string          `json:"status"`
	ReceivedAt string          `json:"received_at"`
	Receipt    string          `json:"receipt"`
	Data       json.RawMessage `json:"data"`
	Extra      json.RawMessage `json:"extra,omitempty"`
	// CheckedInAt and Door: submission.checked_in only.
	CheckedInAt string `json:"checked_in_at,omitempty"`
	Door        string `json:"door,omitempty"`
}

const timeFormat = "2006-01-02T15:04:05.000000Z07:00"

// eventBody renders an event with its entry as it is now (an entry whose
// data was erased carries an empty data object).
func (d *Dispatcher) eventBody(ctx context.Context, e store.Event, docs entryDocs) ([]byte, error) {
	doc, err := d.entry(ctx, docs, e.EntryID)
	if err != nil {
		return nil, err
	}
	data, extra := export.SplitExtra(doc.Data)
	data, err = export.FileData(ctx, d.forms.Get(doc.Form), doc.ID, data, d.opts.Files)
	if err != nil {
		return nil, err
	}
	if len(data) == 0 {
		data = json.RawMessage("{}")
	}
	body := eventJSON{
		Type:      e.Type,
		Timestamp: e.At.UTC().Format(timeFormat),
		Data: entryJSON{ID: doc.ID, Form: doc.Form, Site: doc.Site, Key: doc.Key, Status: e.Status,
			ReceivedAt: doc.ReceivedAt.UTC().Format(timeFormat), Receipt: hex.EncodeToString(doc.Receipt[:]), Data: data, Extra: extra},
	}
	if e.Type == store.EventCheckedIn {
		body.Data.CheckedInAt = body.Timestamp
		if doc.CheckedInAt.Equal(e.At) {
			body.Data.Door = doc.Door
		}
	}
	return json.Marshal(body)
}

// entryDocs are the entries of a job's events, read at once.
type entryDocs map[string]store.EntryDoc

// load reads the entries of deliveries' events in one query; on an error
// it reads none, and each delivery reads its own (and says why it failed).
func (d *Dispatcher) load(ctx context.Context, ds []store.Delivery) entryDocs {
	ids := make([]string, 0, len(ds))
	for _, dl := range ds {
		ids = append(ids, dl.Event.EntryID)
	}
	docs, err := d.st.EntryDocs(ctx, ids)
	if err != nil {
		return nil
	}
	return docs
}

// entry is the entry of an event: from docs, or read now.
func (d *Dispatcher) entry(ctx context.Context, docs entryDocs, id string) (store.EntryDoc, error) {
	if doc, ok := docs[id]; ok {
		return doc, nil
	}
	read, err := d.st.EntryDocs(ctx, []string{id})
	if err != nil {
		return store.EntryDoc{}, fmt.Errorf("read entry %s: %w", id, err)
	}
	doc, ok := read[id]
	if !ok {
		return doc, errors.New("read entry " + id + ": not in the store")
	}
	return doc, nil
}

// values decodes an entry's data by field name.
func values(doc store.EntryDoc) map[string]json.RawMessage {
	data, _ := export.SplitExtra(doc.Data)
	var m map[string]json.RawMessage
	_ = json.Unmarshal(data, &m) // erased or odd data shows no values
	return m
}
