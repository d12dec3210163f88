package intake

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/formd/formd/internal/email"
	"github.com/formd/formd/internal/form"
	"github.com/formd/formd/internal/langpref"
	"github.com/formd/formd/internal/problem"
	"github.com/formd/formd/internal/store"
)

// DraftMailer sends one message at once (email.Mailer): the resume link
// is e-mailed while the person waits, never through the outbox, whose
// rows would have to keep the resume token the store keeps only hashed.
type DraftMailer interface {
	Send(ctx context.Context, msg email.Message) error
}

// DraftBudgets counts the resume links e-mailed, across instances
// (store.Budgets).
type DraftBudgets interface {
	TakeBudgets(ctx context.Context, takes []store.Take, now time.Time) (refused int, err error)
}

// Bounds of the resume links e-mailed: a draft's link is mailed at most
// DraftMailsPerDraftHour times an hour, and one address is mailed resume
// links at most DraftMailsPerAddressHour times an hour, over every form.
const (
	DraftMailsPerDraftHour   = 3
	DraftMailsPerAddressHour = 10
)

// draftMailTimeout bounds the send the person waits for.
const draftMailTimeout = 30 * time.Second

// emailDraft is POST /v1/forms/{form}/drafts/{key}/email with the
// draft's Draft-Token: its resume link, e-mailed to the address in the
// draft's e-mail field. The link is built from the token the request
// carries (the store keeps only its hash, and nothing here stores it);
// the answer is 200 only once the SMTP server accepted the message.
func (h *Handler) emailDraft(w http.ResponseWriter, r *http.Request) error {
	now := h.cfg.Now()
	f, err := h.draftForm(w, r)
	if err != nil {
		return err
	}
	token := r.Header.Get("Draft-Token")
	if token == "" {
		return problem.New(problem.CodeDraftNotFound, "send the draft's resume token in a Draft-Token header")
	}
	hash := draftTokenHash(token)
	d, err := h.cfg.Drafts.Draft(r.Context(), f.ID(), r.PathValue("key"), hash, now)
	if err != nil {
		return draftProblem(w, err)
	}
	addr := draftAddress(f, d.Data)
	if addr == "" {
		return problem.New(problem.CodeDraftNoEmail, "the saved draft has no address in an e-mail field")
	}
	if h.cfg.DraftMail == nil {
		return problem.New(problem.CodeEmailNotConfigured, "")
	}
	if h.cfg.DraftBudgets != nil {
		sum := sha256.Sum256([]byte(strings.ToLower(addr)))
		takes := []store.Take{
			{Key: "draft-mail:" + hex.EncodeToString(hash[:16]), Window: time.Hour, Limit: DraftMailsPerDraftHour},
			{Key: "draft-mail-to:" + hex.EncodeToString(sum[:16]), Window: time.Hour, Limit: DraftMailsPerAddressHour},
		}
		switch refused, err := h.cfg.DraftBudgets.TakeBudgets(r.Context(), takes, now); {
		case err != nil:
			return fmt.Errorf("count the resume link's e-mail: %w", err)
		case refused == 0:
			return problem.New(problem.CodeDraftEmailLimited, fmt.Sprintf("this draft's link was e-mailed %d times in the last hour", DraftMailsPerDraftHour))
		case refused == 1:
			return problem.New(problem.CodeDraftEmailLimited, fmt.Sprintf("this address was e-mailed %d resume links in the last hour", DraftMailsPerAddressHour))
		}
	}
	lang := string(langpref.Accept(r.Header.Get("Accept-Language")))
	if q := langpref.Of(r.URL.Query().Get("lang")); q != langpref.None {
		lang = string(q)
	}
	link := h.cfg.PublicURL + "/f/" + url.PathEscape(f.ID()) + "?resume=" + url.QueryEscape(token)
	msg := draftMessage(f, lang, addr, link, d.ExpiresAt)
	ctx, cancel := context.WithTimeout(r.Context(), draftMailTimeout)
	defer cancel()
	if err := h.cfg.DraftMail.Send(ctx, msg); err != nil {
		h.cfg.Logger.Warn("the resume link was not e-mailed", "form", f.ID(), "err", err)
		return problem.New(problem.CodeDraftEmailFailed, "the mail server did not accept the message")
	}
	body, err := json.Marshal(map[string]any{"sent": true})
	if err != nil {
		return fmt.Errorf("encode answer: %w", err)
	}
	writeJSON(w, http.StatusOK, body)
	return nil
}

// draftAddress is the first address the draft's e-mail fields hold, or
// "" (none typed, or not an address mail can reach).
func draftAddress(f *form.Form, data []byte) string {
	var fields map[string]json.RawMessage
	if json.Unmarshal(data, &fields) != nil {
		return ""
	}
	for _, fd := range f.Def.Fields {
		if fd.Type != form.TypeEmail {
			continue
		}
		var v string
		if json.Unmarshal(fields[fd.Name], &v) != nil || v == "" {
			continue
		}
		if n, err := form.NormalizeEmail(v); err == nil && form.Deliverable(n) == nil {
			return n
		}
	}
	return ""
}

// draftMessage is the e-mail that carries a resume link, in the page's
// language (English unless Chinese).
func draftMessage(f *form.Form, lang, to, link string, expires time.Time) email.Message {
	title := f.Def.Title.For(lang)
	if title == "" {
		title = f.ID()
	}
	day := expires.UTC().Format("2006-01-02")
	var subject, text string
	if lang == string(langpref.Chinese) {
		subject = "继续填写：" + title
		text = "您在“" + title + "”中填写的内容已保存为草稿。用此链接可在任何设备上继续填写：\n\n" + link +
			"\n\n草稿保存至 " + day + "（UTC）。任何拥有此链接的人都能打开您的草稿，请勿转发。如果不是您本人申请的，请忽略此邮件。\n"
	} else {
		subject = "Continue your form: " + title
		text = "What you typed in \"" + title + "\" is saved as a draft. Open this link to continue on any device:\n\n" + link +
			"\n\nThe draft is kept until " + day + " (UTC). Whoever has this link can open your draft: do not forward it. If you did not ask for it, ignore this message.\n"
	}
	b := make([]byte, 12)
	rand.Read(b) //nolint:errcheck // crypto/rand.Read never fails (Go 1.24)
	return email.Message{
		To: []string{to}, Subject: subject, Text: text,
		MessageID: "<draft-" + hex.EncodeToString(b) + "@formd>",
		Headers:   map[string]string{"X-Formd-Form": f.ID()},
	}
}
