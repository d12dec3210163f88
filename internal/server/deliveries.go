package server

import (
	"context"
	"fmt"

	"github.com/formd/formd/internal/channels/dingtalk"
	"github.com/formd/formd/internal/channels/feishu"
	"github.com/formd/formd/internal/channels/slack"
	"github.com/formd/formd/internal/channels/wecom"
	"github.com/formd/formd/internal/email"
	"github.com/formd/formd/internal/outbox"
	"github.com/formd/formd/internal/webhooks"
	"github.com/prometheus/client_golang/prometheus"
)

// openOutbox makes the dispatcher of deliveries: webhooks through the
// guard (--webhook-allow), e-mail through --smtp when it is set.
func (s *Server) openOutbox(ctx context.Context, reg *prometheus.Registry) error {
	var mailer outbox.Mailer
	if c := s.cfg.SMTP; c != nil {
		m, err := email.NewMailer(*c, s.cfg.SMTPFrom, email.Options{})
		if err != nil {
			return fmt.Errorf("e-mail: %w", err)
		}
		mailer, s.mailer = m, m
	}
	for _, f := range s.Forms.All() {
		if n := f.Def.Notify; n != nil && n.Email != nil && mailer == nil {
			s.log.Warn("a form sends e-mail but no SMTP server is set: its e-mail waits in the outbox until --smtp is given", "form", f.ID())
		}
	}
	if s.cfg.StoreDriver().OneInstance {
		// One server holds the data directory: leases left by a crash
		// are this instance's, and need not wait to run out.
		if _, err := s.Store.ReleaseLeases(ctx); err != nil {
			return fmt.Errorf("release the outbox's leases: %w", err)
		}
	}
	sender := webhooks.NewSender(webhooks.Options{Guard: s.Guard})
	s.outbox = outbox.New(s.Store, s.Forms, sender, mailer, outbox.Options{
		// The chat platforms' robots post through the same sender, so
		// through the same guard (--webhook-allow).
		Channels: []outbox.Channel{slack.New(sender), wecom.New(sender), dingtalk.New(sender), feishu.New(sender)},
		Lease:    s.cfg.DeliveryLease, ConsoleURL: s.cfg.PublicURL, Hasher: s.Hasher, Logger: s.log, Metrics: outbox.NewMetrics(reg),
		// Confirmations go where people say: bounded per address and per
		// form, counted in the store so that the bound holds across
		// instances.
		Confirmations: outbox.ConfirmBudget{Store: s.Store},
		Files:         s.entryFiles,
	})
	reg.MustRegister(&outboxCollector{s: s.Store})
	return nil
}
