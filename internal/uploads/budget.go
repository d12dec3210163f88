package uploads

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/netip"
	"time"

	"github.com/formd/formd/internal/challenge"
	"github.com/formd/formd/internal/form"
	"github.com/formd/formd/internal/problem"
	"github.com/formd/formd/internal/store"
	"github.com/prometheus/client_golang/prometheus"
)

// What a stranger may make the server keep (issue 30): an upload is
// created only on a form that is open, with a solved proof-of-work where
// the form asks for one, within the budgets of its address and its form
// (store.UploadLimits, counted by the store so that they hold across
// instances), and while the disk under the uploads keeps its reserve.

// reserveRetry is the Retry-After of an upload refused for the reserve.
const reserveRetry = 300

// ChallengeSpender spends a proof-of-work solution once (store.Challenges).
type ChallengeSpender interface {
	SpendChallenge(ctx context.Context, u store.ChallengeUse, now time.Time) (bool, error)
}

// Proof checks the proof-of-work of an upload to a form that asks for
// one: the solution comes in Upload-Metadata "altcha" (the field the
// submission carries it in), is verified by Signer and spent by the
// store under the upload's id, so that one solution makes one upload.
type Proof struct {
	Signer *challenge.Signer
	Spend  ChallengeSpender
}

// SourceKey is the address an upload's budget counts it under: an IPv4
// address as it is, an IPv6 address as its /64 (one subscriber's
// network, which hands its hosts any address in it): the rule of
// intake.ClientKey, which the rate limits count by. TestSourceKeyIsClientKey
// pins the two to each other (uploads does not import intake).
func SourceKey(ip string) string {
	a, err := netip.ParseAddr(ip)
	if err != nil {
		return ip
	}
	a = a.Unmap()
	if a.Is4() {
		return a.String()
	}
	p, err := a.Prefix(64)
	if err != nil {
		return a.String()
	}
	return p.String()
}

type sourceKey struct{}

// withSource puts the request's budget address in its context.
func (s *Service) withSource(r *http.Request) *http.Request {
	ip := r.RemoteAddr
	if s.cfg.ClientIP != nil {
		ip = s.cfg.ClientIP(r)
	} else if ap, err := netip.ParseAddrPort(r.RemoteAddr); err == nil {
		ip = ap.Addr().String()
	}
	return r.WithContext(context.WithValue(r.Context(), sourceKey{}, SourceKey(ip)))
}

// metrics are the uploads' refusals and the free space the reserve
// watches.
type metrics struct {
	refused *prometheus.CounterVec
	free    prometheus.Gauge
	reserve prometheus.Gauge
}

func newMetrics(reg prometheus.Registerer, reserve int64) *metrics {
	m := &metrics{
		refused: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "formd_uploads_refused_total",
			Help: "Uploads refused before their bytes were kept, by reason: closed, challenge, reserve, or the budget spent (address-bytes, address-in-flight, form-bytes, form-in-flight).",
		}, []string{"reason"}),
		free: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "formd_uploads_free_bytes",
			Help: "Free bytes on the disk of the uploads' directory (--data), as last looked at by an upload.",
		}),
		reserve: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "formd_uploads_reserve_bytes",
			Help: "The free space under --data below which uploads are refused (507).",
		}),
	}
	m.reserve.Set(float64(reserve))
	// Every reason from zero, so that rate() sees the first refusal.
	for _, r := range []string{"closed", "challenge", "reserve", store.BudgetSourceBytes, store.BudgetSourceInFlight, store.BudgetFormBytes, store.BudgetFormInFlight} {
		m.refused.WithLabelValues(r)
	}
	if reg != nil {
		reg.MustRegister(m.refused, m.free, m.reserve)
	}
	return m
}

// refuse counts a refusal and gives its problem.
func (s *Service) refuse(reason string, p *problem.Problem) *problem.Problem {
	s.metrics.refused.WithLabelValues(reason).Inc()
	return p
}

// errReserve is the disk under --data at its reserve: 507, Retry-After.
var errReserve = errors.New("the disk under the uploads is at its reserve")

// checkReserve says whether need more bytes can be written under the
// uploads' directory and still leave the reserve free.
func (s *Service) checkReserve(need int64) *problem.Problem {
	if s.cfg.Reserve <= 0 || s.parts != nil {
		// With --uploads s3 the bytes go to the bucket; what is staged
		// here is one part at a time.
		return nil
	}
	free, err := s.cfg.FreeSpace(s.cfg.Dir)
	if err != nil {
		s.cfg.Logger.Warn("read the free space under the uploads", "dir", s.cfg.Dir, "err", err)
		return nil
	}
	s.metrics.free.Set(float64(free))
	if free-need >= s.cfg.Reserve {
		return nil
	}
	p := problem.New(problem.CodeUploadStorageFull, fmt.Sprintf("%v: %s free, %s kept free", errReserve, form.Size(free), form.Size(s.cfg.Reserve)))
	p.RetryAfter = reserveRetry
	return s.refuse("reserve", p)
}

// admit is the checks of a new upload before it is recorded: the form
// open, its proof-of-work, the reserve. The budgets are the store's, in
// create.
func (s *Service) admit(ctx context.Context, f *form.Form, md map[string]string, size int64, id string, now time.Time) *problem.Problem {
	if !f.OpenAt(now) {
		detail := "the form has closed: it takes no uploads"
		if f.Def.OpensAt != nil && now.Before(*f.Def.OpensAt) {
			detail = "the form opens at " + f.Def.OpensAt.Format(time.RFC3339) + ": it takes no uploads before"
		}
		return s.refuse("closed", problem.New(problem.CodeFormClosed, detail))
	}
	if f.Def.Spam.NeedsChallenge() {
		if p := s.checkProof(ctx, f, md["altcha"], id, now); p != nil {
			return s.refuse("challenge", p)
		}
	}
	return s.checkReserve(size)
}

// checkProof verifies and spends an upload's proof-of-work solution.
func (s *Service) checkProof(ctx context.Context, f *form.Form, payload, id string, now time.Time) *problem.Problem {
	if payload == "" {
		return problem.New(problem.CodeChallengeRequired, "this form asks for a solved proof-of-work challenge before each upload: send it in Upload-Metadata altcha")
	}
	pr := s.cfg.Proof
	if pr == nil || pr.Signer == nil || pr.Spend == nil {
		return problem.New(problem.CodeChallengeInvalid, "this server cannot check proof-of-work solutions")
	}
	sol, err := pr.Signer.Verify(payload, f.ID(), now)
	if err == nil {
		spent, serr := pr.Spend.SpendChallenge(ctx, store.ChallengeUse{Signature: sol.Signature, Form: f.ID(), Key: "upload:" + id, Expires: sol.Expires}, now)
		if serr != nil {
			p := problem.New(problem.CodeStoreUnavailable, "the proof-of-work check could not reach the store; nothing was kept, send again")
			p.RetryAfter = 1
			return p
		}
		if spent {
			return nil
		}
		err = challenge.ErrReplayed
	}
	return problem.New(problem.CodeChallengeInvalid, err.Error()+" ("+challenge.Reason(err)+"): get a new challenge and create the upload again")
}

// create records the upload within its budgets.
func (s *Service) create(ctx context.Context, u store.Upload, now time.Time) error {
	err := s.st.CreateUploadWithin(ctx, u, s.cfg.Limits, now)
	if be, ok := store.IsUploadBudget(err); ok {
		who := "this address"
		if be.Budget == store.BudgetFormBytes || be.Budget == store.BudgetFormInFlight {
			who = "this form"
		}
		what := fmt.Sprintf("%d uploads still being sent", be.Limit)
		if be.Budget == store.BudgetSourceBytes || be.Budget == store.BudgetFormBytes {
			what = form.Size(be.Limit).String() + " of uploads no submission has claimed"
		}
		p := problem.New(problem.CodeUploadBudget, fmt.Sprintf("%s has %s already (%s): finish or submit them, or wait for them to expire", who, what, be.Budget))
		return s.refuse(be.Budget, p)
	}
	return err
}
