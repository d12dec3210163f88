package agent_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/formd/formd/internal/accounts"
	"github.com/formd/formd/internal/admin/agent"
	"github.com/formd/formd/internal/server/servertest"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const forms = `
id: fair
site: a
title: Fair
origins: [https://fair.example.org]
fields:
  - {name: name, type: text, required: true}
  - {name: phone, type: phone, region: CN, required: true}
unique: [[phone]]
---
id: expo
site: b
fields:
  - {name: name, type: text, required: true}
`

// token makes an account of role on sites and an API token of it.
func token(t *testing.T, h *servertest.Harness, email string, role accounts.Role, sites ...string) string {
	t.Helper()
	ctx := context.Background()
	a, err := h.Server.Accounts.AddAccount(ctx, accounts.Operator("test"), accounts.NewAccount{Email: email, Role: role, Sites: sites, Password: "correct horse battery staple"})
	if err != nil {
		t.Fatal(err)
	}
	tok, _, err := h.Server.Accounts.CreateToken(ctx, accounts.Operator("test"), a.ID, "agent")
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

type bearer struct{ token string }

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(r)
}

// overHTTP connects the SDK's client to /v1/admin/mcp with a token.
func overHTTP(t *testing.T, h *servertest.Harness, tok string) *mcp.ClientSession {
	t.Helper()
	c := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil)
	s, err := c.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: h.URL + "/v1/admin/mcp",
		HTTPClient: &http.Client{Transport: bearer{tok}, Timeout: 30 * time.Second}, MaxRetries: -1, DisableStandaloneSSE: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// overStdio connects the SDK's client to formd mcp's relay through an
// in-memory pair of transports (what stdio carries).
func overStdio(t *testing.T, h *servertest.Harness, tok string) *mcp.ClientSession {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	r, err := agent.NewRelay(ctx, h.URL, tok, &http.Client{Timeout: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	st, ct := mcp.NewInMemoryTransports()
	done := make(chan error, 1)
	go func() { done <- r.Server.Run(ctx, st) }()
	c := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil)
	s, err := c.Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		s.Close()
		cancel()
		<-done
		r.Close()
	})
	return s
}

// call calls a tool and decodes its structured answer into out; it
// returns the tool's error text, "" when none.
func call(t *testing.T, s *mcp.ClientSession, name string, args map[string]any, out any) string {
	t.Helper()
	res, err := s.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	if res.IsError {
		var b strings.Builder
		for _, c := range res.Content {
			if tc, ok := c.(*mcp.TextContent); ok {
				b.WriteString(tc.Text)
			}
		}
		return b.String()
	}
	if out != nil {
		raw, _ := json.Marshal(res.StructuredContent)
		if err := json.Unmarshal(raw, out); err != nil {
			t.Fatalf("%s: %v in %s", name, err, raw)
		}
	}
	return ""
}

func submit(t *testing.T, h *servertest.Harness, form, key, body string) {
	t.Helper()
	req, _ := http.NewRequest("POST", h.URL+"/v1/forms/"+form+"/submissions", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", key)
	resp, err := servertest.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 201 {
		t.Fatalf("submit: %d %s", resp.StatusCode, raw)
	}
}

// TestTools runs every tool with the SDK's own client over both
// transports, as an editor of site a: what a reaches works, what b holds
// is refused as the tool's error and audited.
func TestTools(t *testing.T) {
	t.Parallel()
	h := servertest.Start(t, forms, servertest.Options{})
	submit(t, h, "fair", "k-ann", `{"name":"Ann","phone":"13800138000"}`)
	submit(t, h, "expo", "k-bob", `{"name":"Bob"}`)
	editor := token(t, h, "ed@example.org", accounts.Editor, "a")
	for _, tr := range []struct {
		name    string
		connect func(*testing.T, *servertest.Harness, string) *mcp.ClientSession
	}{{"streamable HTTP", overHTTP}, {"stdio relay", overStdio}} {
		t.Run(tr.name, func(t *testing.T) {
			s := tr.connect(t, h, editor)
			tools, err := s.ListTools(context.Background(), nil)
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, tool := range tools.Tools {
				names = append(names, tool.Name)
			}
			want := "list_forms read_form check_definition apply_definition search_entries read_entry export key_status start_audit read_job"
			for _, n := range strings.Fields(want) {
				if !strings.Contains(" "+strings.Join(names, " ")+" ", " "+n+" ") {
					t.Errorf("tool %s missing from %v", n, names)
				}
			}
			for _, n := range names {
				if strings.Contains(n, "erase") || strings.Contains(n, "forget") || strings.Contains(n, "delete") || strings.Contains(n, "cancel") {
					t.Errorf("a tool that erases data: %s", n)
				}
			}

			var list struct{ Forms []struct{ ID, Site string } }
			call(t, s, "list_forms", map[string]any{}, &list)
			if len(list.Forms) != 1 || list.Forms[0].ID != "fair" {
				t.Fatalf("list_forms for an editor of a: %+v", list)
			}
			var def struct{ Definition string }
			if e := call(t, s, "read_form", map[string]any{"form": "fair"}, &def); e != "" || !strings.Contains(def.Definition, "unique: [[phone]]") {
				t.Fatalf("read_form: %q %q", e, def.Definition)
			}

			var found struct {
				Entries []struct{ ID, Key, Status string }
			}
			call(t, s, "search_entries", map[string]any{"form": "fair", "query": "Ann"}, &found)
			if len(found.Entries) != 1 || found.Entries[0].Key != "k-ann" || found.Entries[0].Status != "stored" {
				t.Fatalf("search_entries: %+v", found)
			}
			var entry struct {
				Status string
				Data   map[string]any
			}
			if e := call(t, s, "read_entry", map[string]any{"form": "fair", "id": found.Entries[0].ID}, &entry); e != "" || entry.Data["name"] != "Ann" {
				t.Fatalf("read_entry: %q %+v", e, entry)
			}
			var ks struct {
				Found  bool
				Status string
			}
			if call(t, s, "key_status", map[string]any{"form": "fair", "key": "k-ann"}, &ks); !ks.Found || ks.Status != "stored" {
				t.Fatalf("key_status: %+v", ks)
			}
			var ex struct{ Text string }
			if e := call(t, s, "export", map[string]any{"form": "fair", "format": "jsonl"}, &ex); e != "" || !strings.Contains(ex.Text, `"k-ann"`) {
				t.Fatalf("export: %q %q", e, ex.Text)
			}
			var job struct{ ID string }
			if e := call(t, s, "start_audit", map[string]any{"form": "fair"}, &job); e != "" || job.ID == "" {
				t.Fatalf("start_audit: %q %+v", e, job)
			}
			var jr struct {
				Running bool
				Error   any
			}
			deadline := time.Now().Add(20 * time.Second)
			for call(t, s, "read_job", map[string]any{"job": job.ID}, &jr); jr.Running && time.Now().Before(deadline); call(t, s, "read_job", map[string]any{"job": job.ID}, &jr) {
				time.Sleep(50 * time.Millisecond)
			}
			if jr.Running || jr.Error != nil {
				t.Fatalf("the audit job: %+v", jr)
			}

			// Beyond the token's scope: the tool's error, and audited.
			for _, c := range []struct {
				tool string
				args map[string]any
			}{
				{"read_form", map[string]any{"form": "expo"}},
				{"search_entries", map[string]any{"form": "expo"}},
				{"export", map[string]any{"form": "expo"}},
				{"key_status", map[string]any{"form": "expo", "key": "k-bob"}},
				{"apply_definition", map[string]any{"definition": "id: expo\nsite: b\nfields: [{name: name, type: text}]\n"}},
			} {
				if e := call(t, s, c.tool, c.args, nil); !strings.Contains(e, "form-not-found") && !strings.Contains(e, "forbidden") {
					t.Errorf("%s beyond the token's sites: %q", c.tool, e)
				}
			}
		})
	}
	log, err := h.Server.Accounts.Audit(context.Background(), accounts.Operator("test"), accounts.AuditFilter{Limit: 500})
	if err != nil {
		t.Fatal(err)
	}
	refused := 0
	for _, e := range log {
		if e.Action == "mcp.refused" && strings.Contains(e.Actor, "ed@example.org") {
			refused++
		}
	}
	if refused != 10 {
		t.Fatalf("%d refusals audited, want 10 (5 per transport)", refused)
	}
}

// TestApplyTakesTwoCalls: the first call plans and changes nothing; only
// the plan's token applies it; a token of another plan or caller does
// not.
func TestApplyTakesTwoCalls(t *testing.T) {
	t.Parallel()
	h := servertest.Start(t, forms, servertest.Options{})
	s := overHTTP(t, h, token(t, h, "ed@example.org", accounts.Editor, "a"))
	other := overHTTP(t, h, token(t, h, "ed2@example.org", accounts.Editor, "a"))
	def := "id: fair\nsite: a\ntitle: Spring fair\norigins: [https://fair.example.org]\nfields:\n  - {name: name, type: text, required: true}\n  - {name: phone, type: phone, region: CN, required: true}\nunique: [[phone]]\n"

	var check struct {
		Valid    bool
		Messages []string
	}
	call(t, s, "check_definition", map[string]any{"definition": "id: x\nsite: a\nfields: [{name: n, type: nope}]\n"}, &check)
	if check.Valid || len(check.Messages) == 0 || !strings.Contains(strings.Join(check.Messages, " "), "nope") {
		t.Fatalf("check of a bad definition: %+v", check)
	}
	call(t, s, "check_definition", map[string]any{"definition": "id: x\nsite: a\nfields: [{name: n, type: text}]\n"}, &check)
	if !check.Valid || len(check.Messages) != 1 || !strings.Contains(check.Messages[0], "lists no origins") {
		t.Fatalf("check of a good definition without origins: %+v", check)
	}

	var plan struct {
		Applied bool
		Confirm string
		Plan    struct{ Changes []struct{ Lines []string } }
	}
	call(t, s, "apply_definition", map[string]any{"definition": def}, &plan)
	if plan.Applied || plan.Confirm == "" || len(plan.Plan.Changes) != 1 {
		t.Fatalf("first call: %+v", plan)
	}
	if got := h.Server.Forms.Get("fair").Def.Title.For("en"); got != "Fair" {
		t.Fatalf("the first call changed the form: title %q", got)
	}
	if e := call(t, other, "apply_definition", map[string]any{"definition": def, "confirm": plan.Confirm}, nil); !strings.Contains(e, "confirmation-required") {
		t.Fatalf("another caller's use of the token: %q", e)
	}
	if e := call(t, s, "apply_definition", map[string]any{"definition": def + "capacity: 3\n", "confirm": plan.Confirm}, nil); !strings.Contains(e, "confirmation-required") {
		t.Fatalf("the token for other definitions: %q", e)
	}
	var applied struct{ Applied bool }
	if e := call(t, s, "apply_definition", map[string]any{"definition": def, "confirm": plan.Confirm}, &applied); e != "" || !applied.Applied {
		t.Fatalf("second call: %q %+v", e, applied)
	}
	if got := h.Server.Forms.Get("fair").Def.Title.For("en"); got != "Spring fair" {
		t.Fatalf("after the confirmed call: title %q", got)
	}
}

// TestOnlyTokens: the endpoint takes an API token, nothing else.
func TestOnlyTokens(t *testing.T) {
	t.Parallel()
	h := servertest.Start(t, forms, servertest.Options{})
	for _, auth := range []string{"", "Bearer not-a-token"} {
		req, _ := http.NewRequest("POST", h.URL+"/v1/admin/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		resp, err := servertest.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 401 {
			t.Fatalf("%q: %d", auth, resp.StatusCode)
		}
	}
}
