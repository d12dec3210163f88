package main

import (
	"context"
	"crypto/tls"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/formd/formd/internal/config"
)

func init() {
	commands["healthcheck"] = command{"exit 0 if the server at --addr says it is ready (GET /readyz), else 1: for a container's HEALTHCHECK", healthcheck}
}

// healthcheck asks the server at the configured address (--addr,
// FORMD_ADDR, the config file: what serve listens on) whether it is
// ready. A scratch image has no curl or wget; this is the image's probe.
func healthcheck(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("formd healthcheck", flag.ContinueOnError)
	fs.SetOutput(stderr)
	loader := config.NewLoader(fs, os.Getenv, "addr", "tls-domain", "tls-cert", "tls-key")
	timeout := fs.Duration("timeout", 5*time.Second, "how long to wait for the answer")
	if err := parseFlags(fs, args); err != nil {
		return 2
	}
	cfg, code := cli{"formd healthcheck", stderr}.settings(loader)
	if code != 0 {
		return code
	}
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	url := "http://" + publicAddr(cfg.Addr) + "/readyz"
	client := http.DefaultClient
	if cfg.TLS() {
		// Under TLS --addr speaks HTTPS. The probe asks this machine's
		// own server whether it is ready, by its address, not who it is:
		// the certificate names the public domain, not 127.0.0.1.
		url = "https://" + publicAddr(cfg.Addr) + "/readyz"
		client = &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} //nolint:gosec // a liveness probe of the local process
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		fmt.Fprintf(stderr, "formd healthcheck: %v\n", err)
		return 2
	}
	resp, err := client.Do(req)
	if err != nil {
		fmt.Fprintf(stderr, "formd healthcheck: %s: %v\n", url, err)
		return 1
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
	if resp.StatusCode != http.StatusOK {
		fmt.Fprintf(stderr, "formd healthcheck: %s: %s\n%s", url, resp.Status, body)
		return 1
	}
	fmt.Fprintf(stdout, "%s", strings.TrimSpace(string(body))+"\n")
	return 0
}
