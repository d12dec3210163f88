package agent

import (
	"context"
	"fmt"
	"net/http"
	"strings"

	"github.com/formd/formd/internal/release"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Relay is the tools of a running formd, served again on another
// transport: formd mcp serves them on stdio for an agent on the owner's
// machine. Every call goes to the server's /v1/admin/mcp with the API
// token, so the server checks the token's scope and audits the call as
// it does for any agent; the relay holds no store and no secret but the
// token. (Opening the data directory instead would need the server
// stopped, as the embedded store has one writer, and would bypass the
// token's scope.)
type Relay struct {
	remote *mcp.ClientSession
	// Server serves the relayed tools: Run it on a transport.
	Server *mcp.Server
}

// NewRelay connects to the server at base (such as
// https://forms.example.org) with token and lists its tools.
func NewRelay(ctx context.Context, base, token string, hc *http.Client) (*Relay, error) {
	if hc == nil {
		hc = &http.Client{}
	}
	authed := *hc
	next := hc.Transport
	if next == nil {
		next = http.DefaultTransport
	}
	authed.Transport = bearer{token: token, next: next}
	endpoint := strings.TrimRight(base, "/") + "/v1/admin/mcp"
	client := mcp.NewClient(&mcp.Implementation{Name: "formd mcp", Version: release.Version()}, nil)
	remote, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: endpoint, HTTPClient: &authed, MaxRetries: -1, DisableStandaloneSSE: true}, nil)
	if err != nil {
		return nil, fmt.Errorf("connect to %s: %w", endpoint, err)
	}
	tools, err := remote.ListTools(ctx, nil)
	if err != nil {
		remote.Close()
		return nil, fmt.Errorf("list the tools of %s: %w", endpoint, err)
	}
	s := mcp.NewServer(&mcp.Implementation{Name: "formd", Version: release.Version()}, &mcp.ServerOptions{
		Instructions: remote.InitializeResult().Instructions,
	})
	for _, t := range tools.Tools {
		name := t.Name
		s.AddTool(t, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return remote.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: req.Params.Arguments})
		})
	}
	return &Relay{remote: remote, Server: s}, nil
}

// Close ends the connection to the server.
func (r *Relay) Close() error { return r.remote.Close() }

type bearer struct {
	token string
	next  http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.next.RoundTrip(r)
}
