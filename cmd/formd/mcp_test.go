package main

import (
	"context"
	"os/exec"
	"strings"
	"testing"

	"github.com/formd/formd/internal/accounts"
	"github.com/formd/formd/internal/server/servertest"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestMCPOverStdio starts the built formd mcp as an agent would (the
// SDK's command transport, over the process's stdin and stdout) against a
// running server: the tools are the server's, with the token's scope.
func TestMCPOverStdio(t *testing.T) {
	t.Parallel()
	bin := buildFormd(t, t.TempDir())
	h := servertest.Start(t, "id: fair\nsite: a\nfields:\n  - {name: name, type: text}\n---\nid: expo\nsite: b\nfields:\n  - {name: name, type: text}\n", servertest.Options{})
	ctx := context.Background()
	a, err := h.Server.Accounts.AddAccount(ctx, accounts.Operator("test"), accounts.NewAccount{Email: "v@example.org", Role: accounts.Viewer, Sites: []string{"a"}, Password: "correct horse battery staple"})
	if err != nil {
		t.Fatal(err)
	}
	tok, _, err := h.Server.Accounts.CreateToken(ctx, accounts.Operator("test"), a.ID, "agent")
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "mcp", "--server", h.URL)
	cmd.Env = append(cmd.Environ(), "FORMD_TOKEN="+tok)
	c := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil)
	s, err := c.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	res, err := s.CallTool(ctx, &mcp.CallToolParams{Name: "list_forms", Arguments: map[string]any{}})
	if err != nil || res.IsError {
		t.Fatalf("list_forms: %v %+v", err, res)
	}
	forms, _ := res.StructuredContent.(map[string]any)["forms"].([]any)
	if len(forms) != 1 || forms[0].(map[string]any)["id"] != "fair" {
		t.Fatalf("list_forms for a viewer of a: %v", res.StructuredContent)
	}
	res, err = s.CallTool(ctx, &mcp.CallToolParams{Name: "read_form", Arguments: map[string]any{"form": "expo"}})
	if err != nil || !res.IsError || !strings.Contains(res.Content[0].(*mcp.TextContent).Text, "form-not-found") {
		t.Fatalf("read_form of another site's form: %v %+v", err, res)
	}
}

// TestMCPNeedsServerAndToken: formd mcp says what it needs.
func TestMCPNeedsServerAndToken(t *testing.T) {
	t.Setenv("FORMD_SERVER", "")
	t.Setenv("FORMD_TOKEN", "")
	var out, errb strings.Builder
	if code := run([]string{"mcp"}, &out, &errb); code != 2 || !strings.Contains(errb.String(), "--server URL and --token T are required") {
		t.Fatalf("formd mcp with nothing: %d %q", code, errb.String())
	}
}
