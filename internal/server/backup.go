package server

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/formd/formd/internal/backup"
	"github.com/formd/formd/internal/config"
	"github.com/formd/formd/internal/journal/sqlitejournal"
	"github.com/formd/formd/internal/store/sqlitestore"
	"github.com/prometheus/client_golang/prometheus"
)

// LockData takes the data directory's lock as formd serve does, for a
// restore: it fails while a server runs on dir, and keeps one from
// starting there until release.
func LockData(dir string) (release func(), err error) { return lockData(dir) }

// BackupDrivers are the embedded drivers' files as package backup reads
// them: it copies and counts through them, knowing no table of theirs.
func BackupDrivers() backup.Drivers {
	return backup.Drivers{Store: sqlitestore.Files{}, Journal: sqlitejournal.Files{}}
}

// KnownSchemas are the schema versions this build gives the embedded
// files, read from fresh ones made with today's drivers.
func KnownSchemas(ctx context.Context) (map[string]int, error) {
	return backup.KnownSchemas(ctx, BackupDrivers(), func(ctx context.Context, dir string) error {
		cfg := config.Default()
		cfg.Data = dir
		j, st, err := OpenDrivers(ctx, cfg, slog.New(slog.DiscardHandler))
		if err != nil {
			return err
		}
		return errors.Join(j.Close(), st.Close())
	})
}

// backups are the server's scheduled backups: the metrics always (the
// period at 0 and no timestamp without a schedule), the schedule when
// --backup-every is set.
type backups struct {
	metrics  *backup.Metrics
	schedule *backup.Schedule
}

func newBackups(cfg config.Config, log *slog.Logger, reg prometheus.Registerer) backups {
	b := backups{metrics: backup.NewMetrics(reg)}
	if cfg.BackupEvery > 0 {
		b.schedule = backup.NewSchedule(backup.ScheduleOptions{
			Data: cfg.Data, Dir: cfg.BackupDir, Drivers: BackupDrivers(), Every: cfg.BackupEvery, Keep: cfg.BackupKeep,
			Log: log, Metrics: b.metrics, UploadsElsewhere: uploadsElsewhere(cfg),
		})
	}
	return b
}

// failure is the last scheduled backup's failure, for the console's
// notice; ok is false when the last one succeeded or none ran.
func (b backups) failure() (at time.Time, reason string, failed bool) {
	if b.schedule == nil {
		return time.Time{}, "", false
	}
	st := b.schedule.Status()
	return st.LastFailure, st.LastError, st.LastError != ""
}

// uploadsElsewhere names the bucket complete uploads' bytes live in with
// --uploads s3://…, whose files a backup of --data does not hold; "" for
// the embedded directory.
func uploadsElsewhere(cfg config.Config) string {
	if loc := cfg.UploadsS3; loc != nil {
		return "s3://" + loc.Bucket + "/" + loc.Prefix
	}
	return ""
}

// UploadsElsewhere is uploadsElsewhere for the backup command.
func UploadsElsewhere(cfg config.Config) string { return uploadsElsewhere(cfg) }
