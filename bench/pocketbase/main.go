// Command pocketbase is the peer that formd's benchmark compares against:
// a stock PocketBase (its default settings: SQLite in WAL mode with
// synchronous=NORMAL, request logs on) with one base collection,
// "registrations", shaped like formd's loadtest form: name, phone, email
// and tickets, and a unique index on phone. Anyone may create and list
// records, so that the same generator can drive it without a login and the
// benchmark script can count what was stored.
//
// It lives in its own Go module so that PocketBase never enters formd's
// dependencies or its `go test ./...`.
//
//	go build -o /tmp/pb-bench . && /tmp/pb-bench serve --http 127.0.0.1:8090 --dir /tmp/pb-data
//
// formd loadtest drives it in plain mode:
//
//	formd loadtest --plain --url http://127.0.0.1:8090/api/collections/registrations/records
package main

import (
	"database/sql"
	"errors"
	"fmt"
	"log"

	"github.com/pocketbase/pocketbase"
	"github.com/pocketbase/pocketbase/core"
	"github.com/pocketbase/pocketbase/tools/types"
)

// collectionName is the collection the benchmark posts to.
const collectionName = "registrations"

func main() {
	// Not pocketbase.New: it turns dev mode (every SQL statement logged)
	// on when the binary sits under the temp dir, as a benchmark build may.
	app := pocketbase.NewWithConfig(pocketbase.Config{DefaultDev: false})
	app.OnServe().BindFunc(func(se *core.ServeEvent) error {
		if err := ensureCollection(se.App); err != nil {
			return err
		}
		return se.Next()
	})
	if err := app.Start(); err != nil {
		log.Fatal(err)
	}
}

// ensureCollection creates the registrations collection on the first
// start; later starts keep the one already there.
func ensureCollection(app core.App) error {
	if _, err := app.FindCollectionByNameOrId(collectionName); err == nil {
		return nil
	} else if !errors.Is(err, sql.ErrNoRows) {
		// "Not found" is sql.ErrNoRows; any other error is a real failure
		// to read the schema.
		return fmt.Errorf("look up collection %s: %w", collectionName, err)
	}
	c := core.NewBaseCollection(collectionName)
	c.Fields.Add(
		&core.TextField{Name: "name", Required: true, Max: 100},
		&core.TextField{Name: "phone", Required: true, Max: 32},
		&core.EmailField{Name: "email"},
		&core.NumberField{Name: "tickets", Min: types.Pointer(1.0), Max: types.Pointer(4.0), OnlyInt: true},
	)
	// The same rule formd's form has (unique: [[phone]]), enforced by the
	// database, not by a read before the write.
	c.AddIndex("idx_registrations_phone", true, "phone", "")
	c.CreateRule = types.Pointer("")
	c.ListRule = types.Pointer("")
	if err := app.Save(c); err != nil {
		return fmt.Errorf("create collection %s: %w", collectionName, err)
	}
	return nil
}
