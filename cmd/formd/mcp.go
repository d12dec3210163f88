package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/formd/formd/internal/admin/agent"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func init() {
	commands["mcp"] = command{"serve formd's MCP tools on stdio for an agent, relayed to a running server: --server URL, --token T", mcpCmd}
}

func mcpCmd(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("formd mcp", flag.ContinueOnError)
	fs.SetOutput(stderr)
	server := fs.String("server", "", "the running formd, such as https://forms.example.org (env FORMD_SERVER)")
	token := fs.String("token", "", "an account's API token, whose role and sites the tools get (env FORMD_TOKEN)")
	if err := parseFlags(fs, args); err != nil {
		return 2
	}
	if *server == "" {
		*server = os.Getenv("FORMD_SERVER")
	}
	if *token == "" {
		*token = os.Getenv("FORMD_TOKEN")
	}
	if *server == "" || *token == "" {
		fmt.Fprintln(stderr, "formd mcp: --server URL and --token T are required (or FORMD_SERVER and FORMD_TOKEN): the tools run on that server with the token's role and sites")
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	r, err := agent.NewRelay(ctx, *server, *token, &http.Client{Timeout: 5 * time.Minute})
	if err != nil {
		fmt.Fprintf(stderr, "formd mcp: %v\n", err)
		return 1
	}
	defer r.Close()
	if err := r.Server.Run(ctx, &mcp.StdioTransport{}); err != nil && ctx.Err() == nil {
		fmt.Fprintf(stderr, "formd mcp: %v\n", err)
		return 1
	}
	return 0
}
