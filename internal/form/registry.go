package form

import (
	"context"
	"fmt"
	"log/slog"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/formd/formd/internal/loop"
)

// Record is a form definition (or a site's settings) as a store keeps it:
// what PutForms writes and Forms reads back. It is this package's type so
// that form depends on no part of the pipeline; the stores depend on it.
type Record struct {
	ID     string
	Site   string
	Source []byte // the definition as YAML, parsed again by Parse
	// Capacity is nil for no limit.
	Capacity *int
	WhenFull string
	// UniqueAnswer is the definition's unique_answer (generic when empty):
	// the store decides a registered participant's new key on a full form
	// by it.
	UniqueAnswer string
	// PlaceField is the select field whose options have places of their
	// own ("" for none), and Places those options: the store keeps a
	// guarded count per option beside the form's.
	PlaceField string
	Places     []OptionPlaces
	// Review says new entries are pending until approved or declined.
	Review bool
	// Version increases with every change to any form, so that servers can
	// ask for what changed since the version they have.
	Version   int64
	UpdatedAt time.Time
}

// Source is where the registry reads definitions: the store.
type Source interface {
	Forms(ctx context.Context, after int64) ([]Record, int64, error)
}

// Registry holds the compiled forms a server answers for, refreshed from the
// store so that a change made anywhere (formd forms apply, the admin API,
// another instance) is seen within the refresh interval.
type Registry struct {
	src     Source
	log     *slog.Logger
	forms   atomic.Pointer[map[string]*Form]
	sites   atomic.Pointer[map[string]*Site]
	mu      sync.Mutex // serializes refreshes
	version int64
}

// NewRegistry makes an empty registry; call Refresh to load it.
func NewRegistry(src Source, log *slog.Logger) *Registry {
	r := &Registry{src: src, log: log}
	empty := map[string]*Form{}
	r.forms.Store(&empty)
	noSites := map[string]*Site{}
	r.sites.Store(&noSites)
	return r
}

// Site returns a site's settings, or nil when it has none.
func (r *Registry) Site(id string) *Site {
	return (*r.sites.Load())[id]
}

// Get returns the form with this id, or nil.
func (r *Registry) Get(id string) *Form {
	return (*r.forms.Load())[id]
}

// All returns every form, by id.
func (r *Registry) All() []*Form {
	m := *r.forms.Load()
	out := make([]*Form, 0, len(m))
	for _, f := range m {
		out = append(out, f)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID() < out[j].ID() })
	return out
}

// Refresh loads the forms changed since the last refresh. A stored
// definition that no longer compiles is logged and the previous version
// kept, so one bad row never takes a form offline.
func (r *Registry) Refresh(ctx context.Context) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	recs, version, err := r.src.Forms(ctx, r.version)
	if err != nil {
		return fmt.Errorf("refresh forms: %w", err)
	}
	if len(recs) == 0 {
		r.version = version
		return nil
	}
	next := make(map[string]*Form, len(*r.forms.Load())+len(recs))
	for id, f := range *r.forms.Load() {
		next[id] = f
	}
	nextSites := make(map[string]*Site, len(*r.sites.Load()))
	for id, st := range *r.sites.Load() {
		nextSites[id] = st
	}
	for _, rec := range recs {
		if strings.HasPrefix(rec.ID, siteRecordPrefix) {
			set, err := ParseSet(rec.Source, "stored site "+rec.ID, nil)
			if err != nil || len(set.Sites) != 1 {
				r.log.Error("stored site settings do not compile; keeping the previous version", "site", rec.ID, "err", err)
				continue
			}
			nextSites[set.Sites[0].ID()] = set.Sites[0]
			continue
		}
		if len(rec.Source) == 0 {
			// A deleted form's tombstone (store.DeleteEmptyForm).
			delete(next, rec.ID)
			continue
		}
		forms, err := Parse(rec.Source, "stored form "+rec.ID)
		if err != nil || len(forms) != 1 {
			r.log.Error("stored form definition does not compile; keeping the previous version", "form", rec.ID, "err", err)
			continue
		}
		next[rec.ID] = forms[0]
	}
	r.forms.Store(&next)
	r.sites.Store(&nextSites)
	r.version = version
	return nil
}

// Run refreshes every interval until ctx ends.
func (r *Registry) Run(ctx context.Context, every time.Duration) {
	loop.Every(ctx, every, func() {
		if err := r.Refresh(ctx); err != nil && ctx.Err() == nil {
			r.log.Warn("forms refresh failed", "err", err)
		}
	})
}

// Records turns a set into what the store keeps: each form, and each
// site's settings under its SiteRecordID.
func (s Set) Records() []Record {
	out := Records(s.Forms)
	for _, st := range s.Sites {
		out = append(out, Record{ID: SiteRecordID(st.ID()), Site: st.ID(), Source: st.Source()})
	}
	return out
}

// Records turns compiled forms into what the store keeps.
func Records(forms []*Form) []Record {
	out := make([]Record, len(forms))
	for i, f := range forms {
		out[i] = Record{ID: f.ID(), Site: f.Def.Site, Source: f.Source(), Capacity: f.Def.Capacity, WhenFull: f.Def.WhenFull, UniqueAnswer: f.Def.UniqueAnswer}
		out[i].PlaceField, out[i].Places = f.PlaceField()
		out[i].Review = f.Def.Review
	}
	return out
}
