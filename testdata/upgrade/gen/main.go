// Command gen writes one upgrade fixture: it runs a formd binary built from
// an earlier commit (make.sh builds them) on a fresh data directory,
// submits the entries the upgrade test expects to find (stored,
// waitlisted, duplicate, cancelled, deliveries pending, entries journaled
// and not decided), kills the server with SIGKILL right after a burst of
// async acknowledgements, and writes what each answer was to
// expected.json beside the data. It lives under testdata so that
// go build ./... and go test ./... leave it alone.
package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	_ "github.com/mattn/go-sqlite3"
)

// Answer is one HTTP answer as the old release gave it.
type Answer struct {
	Status int    `json:"status"`
	Body   string `json:"body"`
}

// Entry is one submission of the fixture and the status it must have in
// the store once today's formd has opened the data.
type Entry struct {
	Form  string            `json:"form"`
	Key   string            `json:"key"`
	Data  map[string]string `json:"data"`
	First Answer            `json:"first"`
	// Status is the entry's status when the old release stopped: stored,
	// waitlisted, duplicate, cancelled; "" for one left undecided.
	Status string `json:"status"`
}

// File is one file of an entry of the fixture's file form: what was sent,
// for the upgrade test to download it with today's formd and compare.
type File struct {
	Key    string `json:"key"` // the entry's idempotency key
	Field  string `json:"field"`
	Upload string `json:"upload"`
	Name   string `json:"name"`
	Size   int    `json:"size"`
	SHA256 string `json:"sha256"`
	// First is the submission's answer.
	First Answer `json:"first"`
}

// Expected is expected.json.
type Expected struct {
	Commit string `json:"commit"`
	// Webhooks says the release had webhooks: deliveries to a closed
	// port were pending when it stopped.
	Webhooks bool    `json:"webhooks"`
	Capacity int     `json:"capacity"`
	Entries  []Entry `json:"entries"`
	// Undecided are the keys of the burst form that the journal holds and
	// the store did not decide before SIGKILL.
	Undecided []string `json:"undecided"`
	// Acknowledged are the burst's keys answered 202 (async: an
	// acknowledgement before fsync, which SIGKILL may lose).
	Acknowledged []string `json:"acknowledged"`
	// Files are the files of the upgrade-files form's entries (releases
	// with uploads): one document sent twice, in two entries, and
	// another.
	Files []File `json:"files,omitempty"`
}

const capacity = 3

func main() {
	bin := flag.String("formd", "", "the old formd binary")
	out := flag.String("out", "", "directory to write data/ and expected.json in (must not exist)")
	commit := flag.String("commit", "", "the commit the binary was built from")
	webhooks := flag.Bool("webhooks", true, "the release has webhooks (notify:, --webhook-allow)")
	storeURL := flag.String("store", "sqlite", "the store: sqlite, or a postgres:// URL whose search_path names an empty schema")
	withFiles := flag.Bool("uploads", false, "the release has uploads (a file field, tus at /v1/forms/{form}/uploads)")
	flag.Parse()
	if *bin == "" || *out == "" || *commit == "" {
		log.Fatal("gen -formd BIN -out DIR -commit SHA")
	}
	for attempt := 1; ; attempt++ {
		os.RemoveAll(*out)
		exp, err := run(*bin, *out, *commit, *webhooks, *withFiles, *storeURL)
		if err != nil {
			log.Fatalf("%s: %v", *commit, err)
		}
		if len(exp.Undecided) > 0 {
			b, _ := json.MarshalIndent(exp, "", "  ")
			if err := os.WriteFile(filepath.Join(*out, "expected.json"), append(b, '\n'), 0o644); err != nil {
				log.Fatal(err)
			}
			log.Printf("%s: %d entries, %d undecided (attempt %d)", *commit, len(exp.Entries), len(exp.Undecided), attempt)
			return
		}
		if attempt == 20 {
			log.Fatalf("%s: no entry left undecided after %d attempts", *commit, attempt)
		}
	}
}

const filesForm = `
---
id: upgrade-files
site: upgrade
title: Upgrade files
fields:
  - {name: name,     type: text, required: true}
  - {name: document, type: file, required: true, accept: [application/pdf]}
`

func forms(hookPort int, webhooks bool) string {
	notify := ""
	if webhooks {
		notify = fmt.Sprintf(`
notify:
  webhooks:
    - {url: "http://127.0.0.1:%d/hook", secret: whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw, events: [submission.stored, submission.waitlisted]}`, hookPort)
	}
	return fmt.Sprintf(`id: upgrade-fair
site: upgrade
title: Upgrade fair
fields:
  - {name: name,  type: text,  required: true}
  - {name: email, type: email, required: true}
unique: [[email]]
capacity: %d
when_full: waitlist%s
---
id: upgrade-burst
site: upgrade
title: Upgrade burst
durability: async
fields:
  - {name: n, type: text, required: true}
unique: [[n]]
`, capacity, notify)
}

func freePort() int {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

func run(bin, out, commit string, webhooks, withFiles bool, storeURL string) (*Expected, error) {
	data := filepath.Join(out, "data")
	if err := os.MkdirAll(out, 0o755); err != nil {
		return nil, err
	}
	formsPath := filepath.Join(out, "forms.yaml")
	// The endpoint's port is closed (nothing listens there once the
	// listener above is gone): every delivery fails and stays pending.
	fs := forms(freePort(), webhooks)
	if withFiles {
		fs += filesForm
	}
	if err := os.WriteFile(formsPath, []byte(fs), 0o644); err != nil {
		return nil, err
	}
	addr := fmt.Sprintf("127.0.0.1:%d", freePort())
	if storeURL != "sqlite" {
		if err := emptySchema(storeURL); err != nil {
			return nil, err
		}
	}
	args := []string{"serve", "--data", data, "--addr", addr, "--forms", formsPath, "--rate-limit", "off", "--store", storeURL}
	if webhooks {
		args = append(args, "--webhook-allow", "127.0.0.0/8")
	}
	cmd := exec.Command(bin, args...)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME")}
	// The token is printed once, on stderr or stdout as the release did.
	pr, pw := io.Pipe()
	cmd.Stdout, cmd.Stderr = pw, pw
	stdout := pr
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	killed := false
	defer func() {
		if !killed {
			cmd.Process.Kill()
			cmd.Wait()
		}
	}()
	tokenc := make(chan string, 1)
	go func() {
		re := regexp.MustCompile(`fmd_[A-Za-z0-9_-]+`)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if m := re.FindString(sc.Text()); m != "" {
				select {
				case tokenc <- m:
				default:
				}
			}
		}
	}()
	base := "http://" + addr
	var token string
	select {
	case token = <-tokenc:
	case <-time.After(30 * time.Second):
		return nil, fmt.Errorf("no admin token printed")
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := http.Get(base + "/healthz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				break
			}
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("not healthy: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}

	exp := &Expected{Commit: commit, Webhooks: webhooks, Capacity: capacity}
	submit := func(form, key string, data map[string]string, prefer string) (Answer, error) {
		body, _ := json.Marshal(data)
		req, _ := http.NewRequest("POST", base+"/v1/forms/"+form+"/submissions", bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Idempotency-Key", key)
		if prefer != "" {
			req.Header.Set("Prefer", prefer)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return Answer{}, err
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		return Answer{resp.StatusCode, string(b)}, err
	}
	people := []struct {
		key, name, email, want string
		status                 int
	}{
		{"ann-1", "Ann", "ann@example.org", "stored", 201},
		{"bob-1", "Bob", "bob@example.org", "cancelled", 201},
		{"cat-1", "Cat", "cat@example.org", "stored", 201},
		{"dan-1", "Dan", "dan@example.org", "stored", 201}, // waitlisted, then promoted when Bob cancels
		{"ann-2", "Ann Again", "ANN@example.org", "duplicate", 409},
	}
	for _, p := range people {
		d := map[string]string{"name": p.name, "email": p.email}
		a, err := submit("upgrade-fair", p.key, d, "")
		if err != nil {
			return nil, err
		}
		if a.Status != p.status {
			return nil, fmt.Errorf("%s: %d %s, want %d", p.key, a.Status, a.Body, p.status)
		}
		exp.Entries = append(exp.Entries, Entry{Form: "upgrade-fair", Key: p.key, Data: d, First: a, Status: p.want})
	}
	// Bob cancels: his place goes to Dan, the first waitlisted.
	var bob struct{ ID string }
	json.Unmarshal([]byte(exp.Entries[1].First.Body), &bob)
	req, _ := http.NewRequest("POST", base+"/v1/admin/forms/upgrade-fair/entries/"+bob.ID+"/cancel", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return nil, fmt.Errorf("cancel: %d %s", resp.StatusCode, b)
	}
	eve := map[string]string{"name": "Eve", "email": "eve@example.org"}
	a, err := submit("upgrade-fair", "eve-1", eve, "")
	if err != nil {
		return nil, err
	}
	if a.Status != 201 || !strings.Contains(a.Body, `"waitlisted"`) {
		return nil, fmt.Errorf("eve: %d %s, want 201 waitlisted", a.Status, a.Body)
	}
	exp.Entries = append(exp.Entries, Entry{Form: "upgrade-fair", Key: "eve-1", Data: eve, First: a, Status: "waitlisted"})

	if withFiles {
		if err := sendFiles(base, submit, exp); err != nil {
			return nil, err
		}
	}

	// A burst of async submissions, and SIGKILL right after the last
	// acknowledgement: some are journaled and not decided.
	const n, workers = 400, 16
	var mu sync.Mutex
	var wg sync.WaitGroup
	keys := make(chan int)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range keys {
				key := fmt.Sprintf("burst-%03d", i)
				a, err := submit("upgrade-burst", key, map[string]string{"n": fmt.Sprint(i)}, "respond-async")
				if err == nil && a.Status == 202 {
					mu.Lock()
					exp.Acknowledged = append(exp.Acknowledged, key)
					mu.Unlock()
				}
			}
		}()
	}
	for i := 0; i < n; i++ {
		keys <- i
	}
	close(keys)
	wg.Wait()
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	pw.Close()
	killed = true

	undecided, err := undecidedKeys(data, storeURL)
	if err != nil {
		return nil, err
	}
	exp.Undecided = undecided
	os.Remove(formsPath)
	return exp, nil
}

// undecidedKeys lists the burst keys in the journal with no entry in the
// store. The journal's table was entries before sqlitejournal's third
// migration and journal_entries since.
func undecidedKeys(data, storeURL string) ([]string, error) {
	ctx := context.Background()
	db, err := sql.Open("sqlite3", "file:"+filepath.Join(data, "journal.db")+"?mode=ro")
	if err != nil {
		return nil, err
	}
	defer db.Close()
	table := "journal_entries"
	var n int
	db.QueryRowContext(ctx, `SELECT count(*) FROM main.sqlite_master WHERE name = 'journal_entries'`).Scan(&n)
	if n == 0 {
		table = "entries"
	}
	journaled, err := keys(ctx, db, `SELECT key FROM `+table+` WHERE form = 'upgrade-burst' ORDER BY key`)
	if err != nil {
		return nil, err
	}
	var decided []string
	if storeURL == "sqlite" {
		st, err := sql.Open("sqlite3", "file:"+filepath.Join(data, "store.db")+"?mode=ro")
		if err != nil {
			return nil, err
		}
		defer st.Close()
		decided, err = keys(ctx, st, `SELECT key FROM entries WHERE form = 'upgrade-burst'`)
		if err != nil {
			return nil, err
		}
	} else {
		conn, err := pgx.Connect(ctx, storeURL)
		if err != nil {
			return nil, err
		}
		defer conn.Close(ctx)
		rows, _ := conn.Query(ctx, `SELECT key FROM entries WHERE form = 'upgrade-burst'`)
		decided, err = pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			return nil, err
		}
	}
	var out []string
	for _, k := range journaled {
		if !slices.Contains(decided, k) {
			out = append(out, k)
		}
	}
	return out, nil
}

func keys(ctx context.Context, db *sql.DB, q string) ([]string, error) {
	rows, err := db.QueryContext(ctx, q)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var k string
		if err := rows.Scan(&k); err != nil {
			return nil, err
		}
		out = append(out, k)
	}
	return out, rows.Err()
}

// emptySchema drops and creates the schema the URL's search_path names,
// so that each attempt starts from nothing.
func emptySchema(url string) error {
	ctx := context.Background()
	cfg, err := pgx.ParseConfig(url)
	if err != nil {
		return err
	}
	schema := cfg.RuntimeParams["search_path"]
	if schema == "" {
		return fmt.Errorf("the store URL names no search_path")
	}
	delete(cfg.RuntimeParams, "search_path")
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, `DROP SCHEMA IF EXISTS `+pgx.Identifier{schema}.Sanitize()+` CASCADE; CREATE SCHEMA `+pgx.Identifier{schema}.Sanitize())
	return err
}

// sendFiles uploads three documents over tus — the same bytes twice, in
// two uploads, and another — and submits an entry claiming each.
func sendFiles(base string, submit func(form, key string, data map[string]string, prefer string) (Answer, error), exp *Expected) error {
	same := []byte("%PDF-1.4\n% the same scan, sent for two entries\n" + strings.Repeat("0123456789abcdef", 2000))
	other := []byte("%PDF-1.4\n% another one\n" + strings.Repeat("fedcba9876543210", 900))
	for i, doc := range [][]byte{same, same, other} {
		name := fmt.Sprintf("scan %d.pdf", i+1)
		id, err := tusUpload(base, "upgrade-files", "document", name, doc)
		if err != nil {
			return err
		}
		key := fmt.Sprintf("files-%d", i+1)
		a, err := submit("upgrade-files", key, map[string]string{"name": key, "document": "upload:" + id}, "")
		if err != nil {
			return err
		}
		if a.Status != 201 {
			return fmt.Errorf("%s: %d %s, want 201", key, a.Status, a.Body)
		}
		sum := sha256.Sum256(doc)
		exp.Files = append(exp.Files, File{Key: key, Field: "document", Upload: id, Name: name, Size: len(doc), SHA256: hex.EncodeToString(sum[:]), First: a})
	}
	return nil
}

// tusUpload creates an upload and sends its bytes in one PATCH.
func tusUpload(base, form, field, name string, body []byte) (string, error) {
	b64 := base64.StdEncoding.EncodeToString
	req, _ := http.NewRequest("POST", base+"/v1/forms/"+form+"/uploads", nil)
	req.Header.Set("Tus-Resumable", "1.0.0")
	req.Header.Set("Upload-Length", fmt.Sprint(len(body)))
	req.Header.Set("Upload-Metadata", "field "+b64([]byte(field))+",filename "+b64([]byte(name)))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", err
	}
	resp.Body.Close()
	loc := resp.Header.Get("Location")
	if resp.StatusCode != 201 || loc == "" {
		return "", fmt.Errorf("create an upload: %d", resp.StatusCode)
	}
	if !strings.HasPrefix(loc, "http") {
		loc = base + loc
	}
	req, _ = http.NewRequest("PATCH", loc, bytes.NewReader(body))
	req.Header.Set("Tus-Resumable", "1.0.0")
	req.Header.Set("Upload-Offset", "0")
	req.Header.Set("Content-Type", "application/offset+octet-stream")
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		return "", err
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 204 {
		return "", fmt.Errorf("send an upload's bytes: %d %s", resp.StatusCode, b)
	}
	return loc[strings.LastIndex(loc, "/")+1:], nil
}
