// Package drivers declares, once, what each journal and store driver can
// do: the traits the rest of formd reads (config's checks, the server's
// wiring, formd backup) instead of comparing --journal and --store values
// or URL schemes. The drivers themselves are sibling packages
// (journal/sqlitejournal, journal/natsjournal, store/sqlitestore,
// store/pgstore); a trait that is a capability of the driver's value is
// also a named interface beside the core one (journal.AppendDecider,
// store.TxApplier, store.UploadLocker, journal.OutcomeBus), and
// server's TestDriverTraits checks the table against what each driver
// opened actually has.
//
// Adding a driver means its package, a row here, and its opener in
// server/drivers.go (whose test fails for a row without one).
package drivers

import (
	"fmt"
	"strings"
)

// Names of the drivers, as Driver.Name has them.
const (
	SQLite   = "sqlite"
	NATS     = "nats"
	Postgres = "postgres"
)

// Driver is one journal or store driver and its traits.
type Driver struct {
	// Name is the driver's name (SQLite, NATS, Postgres).
	Name string
	// Schemes are the URL schemes that name the driver in --journal or
	// --store ("postgres://"); none when the setting is the name itself
	// (sqlite, files under --data).
	Schemes []string
	// OneInstance: the driver keeps its data in files under --data that
	// one instance holds (the data directory is locked; a crash's leases
	// are this instance's to release; the installation secret is a file
	// there). Otherwise several instances share it.
	OneInstance bool
	// FastPath: with the other driver also FastPath, intake decides sync
	// entries at append on one shared writer (--decide-at-append;
	// journal.AppendDecider and store.TxApplier).
	FastPath bool
	// UploadLocks (stores): the store locks an upload across every
	// instance of a deployment (store.UploadLocker), which --uploads s3
	// on several instances needs.
	UploadLocks bool
	// OutcomeBus (journals): the journal announces each decided outcome
	// to the instance whose request waits for it (journal.OutcomeBus);
	// a shared journal without it is polled.
	OutcomeBus bool
	// SecureDelete: what erasure deletes is overwritten on disk, not
	// only unlinked (SQLite's secure_delete, JetStream's SecureDeleteMsg).
	SecureDelete bool
	// Backup: formd backup (and --backup-every) copies it; otherwise
	// BackupWith says which tool does.
	Backup     bool
	BackupWith string
	// Workers (stores) is the default of --workers: 1 for a store of one
	// writer, more where decisions run side by side.
	Workers int
}

// Journals are the journal drivers of this build.
var Journals = []Driver{
	{Name: SQLite, OneInstance: true, FastPath: true, SecureDelete: true, Backup: true},
	{Name: NATS, Schemes: []string{"nats://", "tls://"}, OutcomeBus: true, SecureDelete: true, BackupWith: "'nats stream backup'"},
}

// Stores are the store drivers of this build.
var Stores = []Driver{
	{Name: SQLite, OneInstance: true, FastPath: true, SecureDelete: true, Backup: true, Workers: 1},
	{Name: Postgres, Schemes: []string{"postgres://", "postgresql://"}, UploadLocks: true, BackupWith: "pg_dump or PITR", Workers: 4},
}

// Journal is the journal driver a --journal value names.
func Journal(setting string) (Driver, error) { return find("journal", Journals, setting) }

// Store is the store driver a --store value names.
func Store(setting string) (Driver, error) { return find("store", Stores, setting) }

func find(what string, ds []Driver, setting string) (Driver, error) {
	for _, d := range ds {
		if len(d.Schemes) == 0 && setting == d.Name {
			return d, nil
		}
		for _, s := range d.Schemes {
			if strings.HasPrefix(setting, s) {
				return d, nil
			}
		}
	}
	var forms []string
	for _, d := range ds {
		if len(d.Schemes) == 0 {
			forms = append(forms, d.Name)
		} else {
			forms = append(forms, "a "+d.Schemes[0]+" URL")
		}
	}
	return Driver{}, fmt.Errorf("%q is not a %s: use %s", setting, what, strings.Join(forms, " or "))
}

// BackupAdvice says how to back up the journal j and the store s where
// formd backup does not copy them ("back up a postgres store with pg_dump
// or PITR and a nats journal with 'nats stream backup'"); "" when it
// copies both.
func BackupAdvice(j, s Driver) string {
	var parts []string
	if !s.Backup {
		parts = append(parts, "a "+s.Name+" store with "+s.BackupWith)
	}
	if !j.Backup {
		parts = append(parts, "a "+j.Name+" journal with "+j.BackupWith)
	}
	if len(parts) == 0 {
		return ""
	}
	return "back up " + strings.Join(parts, " and ")
}
