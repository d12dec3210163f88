package client_test

import (
	"context"
	"fmt"
	"log"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"time"

	"github.com/formd/formd/client"
	"github.com/formd/formd/internal/config"
	"github.com/formd/formd/internal/server"
)

// A registration, sent the way every formd client should: one key for the
// submission, kept in an outbox until the server's definitive answer.
func Example() {
	serverURL, stop := startExampleServer()
	defer stop()

	outboxDir, err := os.MkdirTemp("", "formd-outbox-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(outboxDir)
	box, err := client.OpenOutbox(outboxDir)
	if err != nil {
		log.Fatal(err)
	}
	c, err := client.New(serverURL, client.Options{Outbox: box})
	if err != nil {
		log.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	// After a crash, send what the previous run left undecided.
	if _, err := c.Resume(ctx); err != nil {
		log.Print(err)
	}

	sub, err := client.NewSubmission("spring-fair", map[string]any{
		"name": "Li Wei", "phone": "+86 138 0013 8000", "tickets": 2,
	})
	if err != nil {
		log.Fatal(err)
	}
	res, err := c.Submit(ctx, sub)
	if err != nil {
		// Not decided in time: still in the outbox for the next run.
		log.Fatal(err)
	}
	fmt.Println("first:", res.Outcome)

	// The same person again, phone written differently, new key.
	again, _ := client.NewSubmission("spring-fair", map[string]any{
		"name": "Li Wei", "phone": "13800138000", "tickets": 1,
	})
	res, err = c.Submit(ctx, again)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("second:", res.Outcome)

	// A retry of the first submission, with its key: the first answer.
	res, err = c.Submit(ctx, sub)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("retry:", res.Outcome, res.HTTPStatus, "replayed:", res.Replayed)
	// Output:
	// first: stored
	// second: already-registered
	// retry: stored 200 replayed: true
}

// startExampleServer runs a formd server in this process, on a loopback
// port, with its data in a temporary directory.
func startExampleServer() (url string, stop func()) {
	dir, err := os.MkdirTemp("", "formd-example-")
	if err != nil {
		log.Fatal(err)
	}
	forms := filepath.Join(dir, "forms.yaml")
	err = os.WriteFile(forms, []byte(`
id: spring-fair
fields:
  - {name: name,    type: text,   required: true}
  - {name: phone,   type: phone,  required: true, region: CN}
  - {name: tickets, type: number, min: 1, max: 4}
unique: [[phone]]
capacity: 300
`), 0o600)
	if err != nil {
		log.Fatal(err)
	}
	cfg := config.Default()
	cfg.Data, cfg.Forms = dir, forms
	ctx, cancel := context.WithCancel(context.Background())
	s, err := server.Open(ctx, cfg, slog.New(slog.DiscardHandler))
	if err != nil {
		log.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx, ln) }()
	return "http://" + ln.Addr().String(), func() {
		cancel()
		if err := <-done; err != nil {
			log.Print(err)
		}
		os.RemoveAll(dir)
	}
}
