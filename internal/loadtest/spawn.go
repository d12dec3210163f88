package loadtest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"time"
)

// SplitCommand splits a command line into words the way a shell would for
// simple cases: blanks separate words, single quotes keep everything,
// double quotes keep blanks and honour \" and \\. There is no expansion
// of variables or globs: the command is run directly, not through a shell,
// so that kill -9 reaches the server itself.
func SplitCommand(s string) ([]string, error) {
	var words []string
	var cur strings.Builder
	inWord := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n':
			if inWord {
				words = append(words, cur.String())
				cur.Reset()
				inWord = false
			}
		case c == '\'':
			j := strings.IndexByte(s[i+1:], '\'')
			if j < 0 {
				return nil, errors.New("unclosed single quote")
			}
			cur.WriteString(s[i+1 : i+1+j])
			i += j + 1
			inWord = true
		case c == '"':
			i++
			for ; i < len(s) && s[i] != '"'; i++ {
				if s[i] == '\\' && i+1 < len(s) && (s[i+1] == '"' || s[i+1] == '\\') {
					i++
				}
				cur.WriteByte(s[i])
			}
			if i >= len(s) {
				return nil, errors.New("unclosed double quote")
			}
			inWord = true
		case c == '\\' && i+1 < len(s):
			i++
			cur.WriteByte(s[i])
			inWord = true
		default:
			cur.WriteByte(c)
			inWord = true
		}
	}
	if inWord {
		words = append(words, cur.String())
	}
	if len(words) == 0 {
		return nil, errors.New("empty command")
	}
	return words, nil
}

// flagValue finds --name VALUE, --name=VALUE, -name VALUE or -name=VALUE
// in a command's arguments.
func flagValue(args []string, name string) (string, bool) {
	for i, a := range args {
		for _, p := range []string{"--" + name, "-" + name} {
			if a == p && i+1 < len(args) {
				return args[i+1], true
			}
			if v, ok := strings.CutPrefix(a, p+"="); ok {
				return v, true
			}
		}
	}
	return "", false
}

// tokenPattern is how formd prints a new admin token on its first start.
var tokenPattern = regexp.MustCompile(`fmd_[A-Za-z0-9_-]{20,}`)

// supervisor runs the server command, kills it with SIGKILL and starts it
// again, and stops it at the end. Its output goes to a log file, in which
// it looks for the admin token of a first start.
type supervisor struct {
	argv    []string
	env     []string
	addr    string // host:port the server listens on
	logPath string

	mu     sync.Mutex
	cmd    *exec.Cmd
	exited chan struct{}
	log    *os.File
	token  string
	starts int
	// expectExit is set before the supervisor kills or stops the
	// server; an exit without it is a crash, which the report names.
	expectExit bool
	crashes    []string
}

func newSupervisor(argv, env []string, addr, logPath string) (*supervisor, error) {
	f, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, fmt.Errorf("server log: %w", err)
	}
	return &supervisor{argv: argv, env: env, addr: addr, logPath: logPath, log: f}, nil
}

// tokenWriter copies the server's output to the log and remembers the
// first admin token it prints.
type tokenWriter struct {
	s    *supervisor
	line []byte
}

func (w *tokenWriter) Write(p []byte) (int, error) {
	w.line = append(w.line, p...)
	for {
		i := bytes.IndexByte(w.line, '\n')
		if i < 0 {
			break
		}
		line := w.line[:i+1]
		if m := tokenPattern.Find(line); m != nil {
			w.s.mu.Lock()
			if w.s.token == "" {
				w.s.token = string(m)
			}
			w.s.mu.Unlock()
			// The token is a secret: keep it out of the log file.
			line = tokenPattern.ReplaceAll(line, []byte("fmd_(hidden)"))
		}
		if _, err := w.s.log.Write(line); err != nil {
			return 0, err
		}
		w.line = w.line[i+1:]
	}
	if len(w.line) > 64<<10 { // a runaway line without a newline
		if _, err := w.s.log.Write(w.line); err != nil {
			return 0, err
		}
		w.line = w.line[:0]
	}
	return len(p), nil
}

// start launches the server and waits until it answers /readyz.
func (s *supervisor) start(ctx context.Context, timeout time.Duration) error {
	s.mu.Lock()
	cmd := exec.Command(s.argv[0], s.argv[1:]...)
	cmd.Env = s.env
	w := &tokenWriter{s: s}
	cmd.Stdout, cmd.Stderr = w, w
	cmd.SysProcAttr = sysProcAttr()
	if err := cmd.Start(); err != nil {
		s.mu.Unlock()
		return fmt.Errorf("start %s: %w", s.argv[0], err)
	}
	exited := make(chan struct{})
	s.cmd, s.exited = cmd, exited
	s.starts++
	s.expectExit = false
	s.mu.Unlock()
	go func() {
		err := cmd.Wait()
		s.mu.Lock()
		if !s.expectExit {
			s.crashes = append(s.crashes, fmt.Sprintf("the server exited by itself (%v); its log is %s", err, s.logPath))
		}
		s.mu.Unlock()
		close(exited)
	}()
	rctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if err := waitReady(rctx, "http://"+s.addr, exited); err != nil {
		s.kill()
		return fmt.Errorf("server did not become ready (%v); its log is %s:\n%s", err, s.logPath, tail(s.logPath, 20))
	}
	return nil
}

// kill sends SIGKILL and waits for the process to be gone.
func (s *supervisor) kill() {
	s.mu.Lock()
	cmd, exited := s.cmd, s.exited
	s.expectExit = true
	s.mu.Unlock()
	if cmd == nil {
		return
	}
	cmd.Process.Kill() //nolint:errcheck // already gone is fine
	<-exited
}

// stop asks the server to shut down (SIGTERM) and kills it if it has not
// within the timeout. It closes the log.
func (s *supervisor) stop(timeout time.Duration) {
	s.mu.Lock()
	cmd, exited := s.cmd, s.exited
	s.expectExit = true
	s.mu.Unlock()
	if cmd != nil {
		cmd.Process.Signal(syscall.SIGTERM) //nolint:errcheck // already gone is fine
		select {
		case <-exited:
		case <-time.After(timeout):
			s.kill()
		}
	}
	s.log.Close()
}

// crashed lists the times the server exited without being told to.
func (s *supervisor) crashed() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.crashes...)
}

// pid is the running server's process id (0 before the first start).
func (s *supervisor) pid() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil || s.cmd.Process == nil {
		return 0
	}
	return s.cmd.Process.Pid
}

func (s *supervisor) adminToken() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.token
}

// waitReady polls base/readyz until it answers 200, the process exits, or
// ctx ends.
func waitReady(ctx context.Context, base string, exited <-chan struct{}) error {
	hc := &http.Client{Timeout: 2 * time.Second}
	tick := time.NewTicker(25 * time.Millisecond)
	defer tick.Stop()
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/readyz", nil)
		if err != nil {
			return err
		}
		if resp, err := hc.Do(req); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-exited:
			return errors.New("the server exited")
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
	}
}

// tail is the last n lines of a file, for error messages.
func tail(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// freeLoopbackAddr finds a free port on 127.0.0.1 for a spawned server.
func freeLoopbackAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("find a free port: %w", err)
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}
