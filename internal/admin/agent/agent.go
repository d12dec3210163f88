// Package agent is formd's MCP server (Model Context Protocol, on the
// official Go SDK): the tools an agent uses to read and change forms and
// read entries, each through the admin API's service code with the
// principal of the API token that calls it, so that its role and sites
// decide what a tool may do, as they do for every admin route. A call
// beyond them is the tool's error, recorded in the audit log.
//
// No tool erases or cancels anything. Applying a definition takes two
// calls: the first returns the change summary and a confirmation token
// bound to that plan and that caller; only a second call with the token
// applies it.
//
// The tools are served over streamable HTTP at /v1/admin/mcp (Handler);
// formd mcp serves the same tools on stdio by relaying them to a running
// server (Relay).
package agent

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/formd/formd/internal/accounts"
	"github.com/formd/formd/internal/admin"
	"github.com/formd/formd/internal/export"
	"github.com/formd/formd/internal/form"
	"github.com/formd/formd/internal/journal"
	"github.com/formd/formd/internal/problem"
	"github.com/formd/formd/internal/release"
	"github.com/formd/formd/internal/store"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Status says what became of a submission key (intake.Statuses.Status).
type Status func(ctx context.Context, form, key string) (status string, found bool, err error)

// Tools are the MCP tools on the admin API's service code.
type Tools struct {
	Admin  *admin.Handler
	Status Status
}

// maxExport bounds an export a tool returns in one answer.
const maxExport = 8 << 20

// Handler serves the tools over streamable HTTP. Only an API token
// (Authorization: Bearer) is accepted, never a console session: each
// request makes a server for that token's principal (stateless mode), so
// no session outlives the token's check.
func (t *Tools) Handler() http.Handler {
	h := mcp.NewStreamableHTTPHandler(func(r *http.Request) *mcp.Server {
		p, _ := r.Context().Value(principalKey{}).(accounts.Principal)
		return t.Server(p)
	}, &mcp.StreamableHTTPOptions{Stateless: true, JSONResponse: true})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") == "" {
			w.Header().Set("WWW-Authenticate", `Bearer realm="formd admin"`)
			problem.Write(w, r, t.Admin.Log, fmt.Errorf("the MCP endpoint takes an API token: %w", accounts.ErrUnauthenticated))
			return
		}
		p, err := t.Admin.Auth.Authenticate(r)
		if err != nil {
			w.Header().Set("WWW-Authenticate", `Bearer realm="formd admin"`)
			problem.Write(w, r, t.Admin.Log, err)
			return
		}
		h.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), principalKey{}, p)))
	})
}

type principalKey struct{}

// Server is an MCP server whose tools act as p.
func (t *Tools) Server(p accounts.Principal) *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "formd", Version: release.Version()}, &mcp.ServerOptions{
		Instructions: "formd's forms and entries. Definitions are formd's YAML (or JSON): check_definition first, then apply_definition twice (the plan, then confirm with its token). No tool erases data.",
	})
	c := caller{t: t, p: p}
	add(s, c, "list_forms", "List the forms this token may read: id, site, title, whether open.", c.listForms)
	add(s, c, "read_form", "Read a form's definition (YAML); webhook and robot secrets are masked unless the token's role is owner.", c.readForm)
	add(s, c, "check_definition", "Check form definitions (YAML or JSON) as `formd forms check` does, with the same messages; nothing is stored.", c.checkDefinition)
	add(s, c, "apply_definition", "Apply form definitions in two calls: without confirm, the change summary and a confirm token (nothing changes); again with that token, the change is applied. A token works only for the same definitions, the same plan and the same caller.", c.applyDefinition)
	add(s, c, "search_entries", "Search a form's entries (newest first): query matches any answer, status filters (stored, waitlisted, pending, cancelled, spam, …).", c.searchEntries)
	add(s, c, "read_entry", "Read one entry of a form: its answers, status, receipt and history.", c.readEntry)
	add(s, c, "export", "Export a form's entries as csv or jsonl text.", c.export)
	add(s, c, "key_status", "The status of a submission by its idempotency key: stored, waitlisted, processing, … or not found.", c.keyStatus)
	add(s, c, "start_audit", "Start an audit of a form (the journal against the store); read its result with read_job.", c.startAudit)
	add(s, c, "read_job", "Read an audit job started with start_audit: running, or its findings.", c.readJob)
	return s
}

// caller is one principal's use of the tools.
type caller struct {
	t *Tools
	p accounts.Principal
}

// add registers a tool whose errors are the tool's (IsError results) and
// whose refusals are audited.
func add[In, Out any](s *mcp.Server, c caller, name, desc string, fn func(context.Context, In) (Out, error)) {
	mcp.AddTool(s, &mcp.Tool{Name: name, Description: desc}, func(ctx context.Context, _ *mcp.CallToolRequest, in In) (*mcp.CallToolResult, Out, error) {
		out, err := fn(ctx, in)
		if err != nil {
			var zero Out
			pr := problem.From(err)
			if pr.Code == problem.CodeForbidden || pr.Code == problem.CodeFormNotFound {
				if aerr := c.t.Admin.Auth.Record(ctx, accounts.Entry{At: c.t.Admin.Now(), Actor: c.p.String(), Action: "mcp.refused",
					Target: name, Detail: pr.Code + ": " + argsOf(in)}); aerr != nil {
					return nil, zero, fmt.Errorf("record the refusal in the audit log: %w", aerr)
				}
			}
			if pr.Code == problem.CodeInternal {
				c.t.Admin.Log.Error("mcp tool failed", "tool", name, "err", err)
				return nil, zero, errors.New("internal error")
			}
			detail := pr.Detail
			if detail == "" {
				detail = pr.Title
			}
			return nil, zero, fmt.Errorf("%s: %s", pr.Code, detail)
		}
		return nil, out, nil
	})
}

// argsOf is a tool's arguments for the audit log: the form and key or
// id, never a definition's text or a search's words.
func argsOf(in any) string {
	raw, _ := json.Marshal(in)
	var m map[string]any
	_ = json.Unmarshal(raw, &m)
	var parts []string
	for _, k := range []string{"form", "id", "key", "job"} {
		if v, ok := m[k].(string); ok && v != "" {
			parts = append(parts, k+"="+v)
		}
	}
	return strings.Join(parts, " ")
}

type formArg struct {
	Form string `json:"form" jsonschema:"the form's id"`
}

type formInfo struct {
	ID    string `json:"id"`
	Site  string `json:"site"`
	Title any    `json:"title,omitempty" jsonschema:"a string, or an object of language to string"`
	Open  bool   `json:"open"`
}

type formList struct {
	Forms []formInfo `json:"forms"`
}

func (c caller) listForms(_ context.Context, _ struct{}) (formList, error) {
	out := formList{Forms: []formInfo{}}
	now := c.t.Admin.Now()
	for _, f := range c.t.Admin.VisibleForms(c.p) {
		out.Forms = append(out.Forms, formInfo{ID: f.ID(), Site: f.Def.Site, Title: f.Def.Title, Open: f.OpenAt(now)})
	}
	return out, nil
}

type definition struct {
	Form       string `json:"form"`
	Site       string `json:"site"`
	Definition string `json:"definition"`
}

func (c caller) readForm(_ context.Context, in formArg) (definition, error) {
	f, err := c.t.Admin.Authorize(c.p, in.Form, accounts.Read)
	if err != nil {
		return definition{}, err
	}
	return definition{Form: f.ID(), Site: f.Def.Site, Definition: string(admin.DefinitionFor(c.p, f))}, nil
}

type defArg struct {
	Definition string `json:"definition" jsonschema:"form definitions, YAML or JSON: one form, a list, or several YAML documents"`
}

type checkResult struct {
	Valid    bool     `json:"valid"`
	Forms    []string `json:"forms"`
	Messages []string `json:"messages"`
}

// checkDefinition answers what formd forms check prints: the problems of
// a definition that does not check, or the forms and the warnings.
func (c caller) checkDefinition(_ context.Context, in defArg) (checkResult, error) {
	set, err := form.ParseSet([]byte(in.Definition), "", c.t.Admin.CheckURL)
	if err != nil {
		var de *form.DefinitionError
		if errors.As(err, &de) {
			return checkResult{Forms: []string{}, Messages: strings.Split(de.Error(), "\n")}, nil
		}
		return checkResult{}, err
	}
	return checkResult{Valid: true, Forms: set.IDs(), Messages: nonNil(set.Warnings())}, nil
}

type applyArg struct {
	Definition string `json:"definition" jsonschema:"form definitions, YAML or JSON"`
	Confirm    string `json:"confirm,omitempty" jsonschema:"the confirm token the first call returned; leave out to get the plan"`
}

type applyResult struct {
	Applied bool           `json:"applied"`
	Plan    admin.PlanJSON `json:"plan"`
	// Confirm is the token the second call must send; empty once applied.
	Confirm string   `json:"confirm,omitempty"`
	Forms   []string `json:"forms,omitempty"`
}

// applyDefinition plans, and applies only with the plan's token. The
// token names the caller, the definitions' text and the plan: if entries
// arrive or the form changes between the calls so that the plan differs,
// the old token no longer applies and the answer is the new plan.
func (c caller) applyDefinition(ctx context.Context, in applyArg) (applyResult, error) {
	raw := []byte(in.Definition)
	pj, err := c.t.Admin.PlanDefinitions(ctx, c.p, raw)
	if err != nil {
		return applyResult{}, err
	}
	plan, _ := json.Marshal(pj)
	sum := sha256.Sum256(bytes.Join([][]byte{[]byte("formd/mcp/apply/v1"), []byte(c.p.String()), plan}, []byte{0}))
	token := hex.EncodeToString(sum[:16])
	if in.Confirm == "" || in.Confirm != token {
		if in.Confirm != "" {
			return applyResult{}, problem.New(problem.CodeConfirmationRequired, "the confirm token is not this plan's (the definitions or what they change differ from the first call's): read the plan again and confirm with its token "+token)
		}
		return applyResult{Plan: pj, Confirm: token}, nil
	}
	// The caller confirmed this very plan (its token above): the admin
	// API's own confirmation of a plan with risks is that plan's.
	ids, err := c.t.Admin.ApplyForms(ctx, c.p, raw, pj.Confirm)
	if err != nil {
		return applyResult{}, err
	}
	return applyResult{Applied: true, Plan: pj, Forms: ids}, nil
}

type searchArg struct {
	Form   string `json:"form" jsonschema:"the form's id"`
	Query  string `json:"query,omitempty" jsonschema:"words any answer contains"`
	Status string `json:"status,omitempty" jsonschema:"only entries of this status"`
	Limit  int    `json:"limit,omitempty" jsonschema:"at most this many entries (default 50, at most 500)"`
}

type row struct {
	ID         string `json:"id"`
	Key        string `json:"key"`
	Status     string `json:"status"`
	ReceivedAt string `json:"received_at"`
	Data       any    `json:"data" jsonschema:"the answers by field name; null once erased"`
}

type rows struct {
	Entries []row `json:"entries"`
	// More says older entries match too (search again with a narrower
	// query, or export).
	More bool `json:"more"`
}

func (c caller) searchEntries(ctx context.Context, in searchArg) (rows, error) {
	f, err := c.t.Admin.Authorize(c.p, in.Form, accounts.Read)
	if err != nil {
		return rows{}, err
	}
	v := url.Values{}
	if in.Query != "" {
		v.Set("q", in.Query)
	}
	if in.Status != "" {
		v.Set("status", in.Status)
	}
	if in.Limit > 0 {
		v.Set("limit", fmt.Sprint(in.Limit))
	}
	sel, err := c.t.Admin.ParseSelection(f, v)
	if err != nil {
		return rows{}, err
	}
	pg, err := c.t.Admin.Submissions(ctx, f, sel)
	if err != nil {
		return rows{}, err
	}
	out := rows{Entries: []row{}, More: pg.Next != (store.Cursor{})}
	for _, r := range pg.Rows {
		out.Entries = append(out.Entries, row{ID: r.ID, Key: r.Key, Status: r.Status, ReceivedAt: r.ReceivedAt.UTC().Format("2006-01-02T15:04:05Z"), Data: nullIfNil(r.Data)})
	}
	return out, nil
}

type entryArg struct {
	Form string `json:"form" jsonschema:"the form's id"`
	ID   string `json:"id" jsonschema:"the entry's id"`
}

func (c caller) readEntry(ctx context.Context, in entryArg) (map[string]any, error) {
	f, err := c.t.Admin.Authorize(c.p, in.Form, accounts.Read)
	if err != nil {
		return nil, err
	}
	e, err := c.t.Admin.Entry(ctx, f, in.ID)
	if err != nil {
		return nil, err
	}
	var history []map[string]any
	for _, ev := range e.History {
		history = append(history, map[string]any{"type": ev.Type, "at": ev.At.UTC()})
	}
	return map[string]any{"id": e.ID, "form": e.Form, "key": e.Key, "status": e.Status, "received_at": e.ReceivedAt.UTC(),
		"receipt": hex.EncodeToString(e.Receipt[:]), "data": nullIfNil(e.Data), "history": history}, nil
}

type exportArg struct {
	Form   string `json:"form" jsonschema:"the form's id"`
	Format string `json:"format,omitempty" jsonschema:"csv (default) or jsonl"`
}

type exported struct {
	Format string `json:"format"`
	Text   string `json:"text"`
}

func (c caller) export(ctx context.Context, in exportArg) (exported, error) {
	f, err := c.t.Admin.Authorize(c.p, in.Form, accounts.Read)
	if err != nil {
		return exported{}, err
	}
	format := in.Format
	if format == "" {
		format = "csv"
	}
	if format != "csv" && format != "jsonl" {
		return exported{}, problem.New(problem.CodeInvalidRequest, "format must be csv or jsonl (xlsx through GET /v1/admin/forms/{form}/export)")
	}
	var buf bytes.Buffer
	if err := export.Write(ctx, c.t.Admin.Store, f, format, &limited{w: &buf, left: maxExport}, export.Options{Files: c.t.Admin.Files}); err != nil {
		if errors.Is(err, errTooBig) {
			return exported{}, problem.New(problem.CodeInvalidRequest, fmt.Sprintf("the export is over %d MiB: download it with GET /v1/admin/forms/%s/export or formd export", maxExport>>20, f.ID()))
		}
		return exported{}, err
	}
	if err := c.t.Admin.Auth.Record(ctx, accounts.Entry{At: c.t.Admin.Now(), Actor: c.p.String(), Action: "mcp.export", Site: f.Def.Site, Form: f.ID(), Detail: "format=" + format}); err != nil {
		return exported{}, err
	}
	return exported{Format: format, Text: buf.String()}, nil
}

var errTooBig = errors.New("export too big")

type limited struct {
	w    *bytes.Buffer
	left int
}

func (l *limited) Write(p []byte) (int, error) {
	if len(p) > l.left {
		return 0, errTooBig
	}
	l.left -= len(p)
	return l.w.Write(p)
}

type keyArg struct {
	Form string `json:"form" jsonschema:"the form's id"`
	Key  string `json:"key" jsonschema:"the submission's idempotency key"`
}

type keyStatus struct {
	Found  bool   `json:"found"`
	Status string `json:"status,omitempty"`
}

func (c caller) keyStatus(ctx context.Context, in keyArg) (keyStatus, error) {
	f, err := c.t.Admin.Authorize(c.p, in.Form, accounts.Read)
	if err != nil {
		return keyStatus{}, err
	}
	st, found, err := c.t.Status(ctx, f.ID(), in.Key)
	if err != nil {
		return keyStatus{}, err
	}
	return keyStatus{Found: found, Status: st}, nil
}

func (c caller) startAudit(_ context.Context, in formArg) (map[string]any, error) {
	j, err := c.t.Admin.StartAudit(c.p, journal.Filter{Form: in.Form})
	if err != nil {
		return nil, err
	}
	return admin.JobView(j), nil
}

type jobArg struct {
	Job string `json:"job" jsonschema:"the job id start_audit returned"`
}

func (c caller) readJob(_ context.Context, in jobArg) (map[string]any, error) {
	j, err := c.t.Admin.JobOf(c.p, in.Job)
	if err != nil {
		return nil, err
	}
	return admin.JobView(j), nil
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

func nullIfNil(b json.RawMessage) json.RawMessage {
	if b == nil {
		return json.RawMessage("null")
	}
	return b
}
