package server

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/coreos/go-systemd/v22/daemon"
	"github.com/formd/formd/internal/journal"
)

// startSystemd speaks systemd's notify protocol when formd runs as a
// Type=notify service (NOTIFY_SOCKET set; without it every call is a
// no-op): READY=1 once formd serves, then, when the unit sets
// WatchdogSec=, a WATCHDOG=1 ping each half interval for as long as the
// journal's writer answers. A writer stuck in a commit takes submissions
// into its queue and makes none durable: the pings stop, and systemd
// restarts formd. The returned function ends the pings; stopping says
// STOPPING=1 when the shutdown begins.
func (s *Server) startSystemd(addr string) (stop func()) {
	if err := notify(daemon.SdNotifyReady + "\nSTATUS=serving on " + addr); err != nil {
		s.log.Warn("systemd: READY=1 not sent", "err", err)
	}
	interval, err := daemon.SdWatchdogEnabled(false)
	if err != nil {
		s.log.Warn("systemd: watchdog setting not read (WATCHDOG_USEC)", "err", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	if interval > 0 {
		ticker := time.NewTicker(interval / 2)
		wg.Go(func() {
			defer ticker.Stop()
			watchdog(ctx, ticker.C, writerAlive(s.Journal), interval/2, notify, addr, s.log)
		})
	}
	return func() {
		cancel()
		wg.Wait()
	}
}

// stopping tells systemd the shutdown has begun: the pings go on until
// what was journaled is decided or left for the next start.
func (s *Server) stopping() {
	if err := notify(daemon.SdNotifyStopping); err != nil {
		s.log.Warn("systemd: STOPPING=1 not sent", "err", err)
	}
}

// notify sends a state to systemd; nothing without NOTIFY_SOCKET.
func notify(state string) error {
	_, err := daemon.SdNotify(false, state)
	return err
}

// writerAlive is the watchdog's check of the journal: its writer answers
// (journal.Liveness), or, for a journal without a writer of its own, it
// answers a read of its backlog.
func writerAlive(j journal.Journal) func(context.Context) error {
	if l, ok := j.(journal.Liveness); ok {
		return l.Alive
	}
	return func(ctx context.Context) error {
		_, err := j.Stats(ctx)
		return err
	}
}

// watchdog pings at each tick on which alive answers within timeout. On
// the first tick it does not, it says why in the unit's status instead
// (systemctl status shows it), and says "serving" again before the first
// ping once it does.
func watchdog(ctx context.Context, ticks <-chan time.Time, alive func(context.Context) error, timeout time.Duration,
	notify func(string) error, addr string, log *slog.Logger) {
	stuck := false
	for {
		select {
		case <-ctx.Done():
			return
		case <-ticks:
		}
		actx, cancel := context.WithTimeout(ctx, timeout)
		err := alive(actx)
		cancel()
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			if !stuck {
				stuck = true
				log.Error("the journal writer does not answer: systemd watchdog pings stopped", "err", err)
				if err := notify("STATUS=journal writer not answering: " + err.Error()); err != nil {
					log.Warn("systemd: status not sent", "err", err)
				}
			}
			continue
		}
		if stuck {
			stuck = false
			log.Info("the journal writer answers again: systemd watchdog pings resumed")
			if err := notify("STATUS=serving on " + addr); err != nil {
				log.Warn("systemd: status not sent", "err", err)
			}
		}
		if err := notify(daemon.SdNotifyWatchdog); err != nil {
			log.Warn("systemd: WATCHDOG=1 not sent", "err", err)
		}
	}
}
