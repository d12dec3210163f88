package pgstore

import (
	"context"

	"github.com/formd/formd/internal/form"
	"github.com/formd/formd/internal/store"
	"github.com/jackc/pgx/v5"
)

// Options with places of their own (migration 0074): the form's row in
// capacity names the field (place_field), option_places counts each
// option's places, and entries.place is the option an entry holds, waits
// for, or was turned away by. The decision is formd_take_place's, in
// formd_place's transaction (functions.sql).

// queuePlaces keeps a form's place field and its options' limits, in the
// batch of PutForms (after the form's capacity row). An option the
// definition no longer lists keeps its row (entries may hold its places)
// without a limit.
func queuePlaces(b *pgx.Batch, f form.Record) {
	var field *string
	if f.PlaceField != "" {
		field = &f.PlaceField
	}
	b.Queue(`UPDATE capacity SET place_field = $2, review = $3 WHERE form = $1`, f.ID, field, f.Review)
	b.Queue(`UPDATE option_places SET capacity = NULL WHERE form = $1`, f.ID)
	for _, o := range f.Places {
		b.Queue(`INSERT INTO option_places(form, value, capacity, taken) VALUES ($1, $2, $3, 0)
			ON CONFLICT (form, value) DO UPDATE SET capacity = excluded.capacity`, f.ID, o.Value, o.Capacity)
	}
}

// optionCapacities adds each form's option places to out.
func (s *Store) optionCapacities(ctx context.Context, out map[string]store.Capacity) error {
	rows, err := s.pool.Query(ctx, `SELECT `+store.OptionCapacityColumns+`
		FROM option_places o JOIN capacity c ON c.form = o.form WHERE c.place_field IS NOT NULL`)
	if err != nil {
		return err
	}
	defer rows.Close()
	return store.AddOptionCapacities(rows, out)
}

// fullOptions fills the FullOption of the rejections among out, read from
// their entries (formd_decide's result predates option places, and a
// rejection's option never changes once decided).
func (s *Store) fullOptions(ctx context.Context, out []store.Outcome) error {
	var ids []string
	for _, o := range out {
		if o.Decision == store.StatusRejected && o.SameAs == nil {
			ids = append(ids, o.ID)
		}
	}
	if len(ids) == 0 {
		return nil
	}
	rows, err := s.pool.Query(ctx, `SELECT id, place FROM entries WHERE id = ANY($1) AND place IS NOT NULL`, ids)
	if err != nil {
		return classify("read full options", err)
	}
	defer rows.Close()
	full := map[string]string{}
	for rows.Next() {
		var id, place string
		if err := rows.Scan(&id, &place); err != nil {
			return classify("read full options", err)
		}
		full[id] = place
	}
	if err := rows.Err(); err != nil {
		return classify("read full options", err)
	}
	for i := range out {
		if out[i].Decision == store.StatusRejected {
			out[i].FullOption = full[out[i].ID]
		}
	}
	return nil
}
