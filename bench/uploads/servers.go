package main

import (
	"debug/buildinfo"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/formd/formd/bench/proc"
)

// server is a process the harness started: formd or tusd.
type server struct {
	name string
	cmd  *exec.Cmd
	base string
	http *http.Client
	// ready is VmRSS once it answered; peak the highest VmRSS sampled.
	ready int64
	mu    sync.Mutex
	peak  int64
}

// formYAML is formd's form: one file field that takes files up to max
// bytes.
func formYAML(max int64) string {
	return fmt.Sprintf(`id: bench-files
site: bench
title: Upload benchmark
fields:
  - {name: doc, type: file, max_size: %d, accept: [application/pdf]}
`, max)
}

// startFormd runs formd serve with its data under dir, with every
// default but the budgets of what one address may make it keep (one
// address sends every upload: those budgets are not what is measured).
func startFormd(bin, dir, uploadsTo string, maxSize int64) (*server, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	forms := filepath.Join(dir, "forms.yaml")
	if err := os.WriteFile(forms, []byte(formYAML(maxSize)), 0o600); err != nil {
		return nil, err
	}
	port, err := proc.FreePort()
	if err != nil {
		return nil, err
	}
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	args := []string{"serve", "--data", filepath.Join(dir, "data"), "--addr", addr, "--forms", forms,
		"--log-level", "warn", "--rate-limit", "off",
		"--upload-address-bytes", "0", "--upload-address-in-flight", "0", "--upload-form-bytes", "0", "--upload-form-in-flight", "0"}
	if uploadsTo != "" {
		args = append(args, "--uploads", uploadsTo)
	}
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), "FORMD_CONFIG=")
	return run("formd", cmd, "http://"+addr, "/readyz", filepath.Join(dir, "formd.log"))
}

// startTusd runs tusd's own server with its filestore (and filelocker)
// in dir, at its defaults but the address and its least logging,
// -verbose=false: still a few lines per request at Info (tusd has no
// higher level), where formd runs at --log-level warn — some hundreds of
// bytes per upload, to a file.
func startTusd(bin, dir string) (*server, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	port, err := proc.FreePort()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, "-host", "127.0.0.1", "-port", strconv.Itoa(port), "-upload-dir", filepath.Join(dir, "files"),
		"-base-path", "/files/", "-verbose=false")
	// The greeting at / answers 200 once it listens.
	return run("tusd", cmd, fmt.Sprintf("http://127.0.0.1:%d", port), "/", filepath.Join(dir, "tusd.log"))
}

func run(name string, cmd *exec.Cmd, base, ready, logPath string) (*server, error) {
	logf, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	defer logf.Close()
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	s := &server{name: name, cmd: cmd, base: base,
		http: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 128, DisableCompression: true}, Timeout: 10 * time.Minute}}
	if err := proc.WaitReady(base+ready, 30*time.Second); err != nil {
		s.stop()
		b, _ := os.ReadFile(logPath)
		return nil, fmt.Errorf("%s: %w\n%s", name, err, b)
	}
	s.ready = s.rss()
	s.peak = s.ready
	return s, nil
}

func (s *server) stop() {
	s.cmd.Process.Signal(os.Interrupt) //nolint:errcheck // it may be gone
	s.cmd.Wait()                       //nolint:errcheck // its exit status does not matter here
}

// status reads a field of /proc/PID/status in bytes (VmRSS, VmHWM).
func (s *server) status(field string) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", s.cmd.Process.Pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return kb << 10
		}
	}
	return 0
}

func (s *server) rss() int64 { return s.status("VmRSS") }
func (s *server) hwm() int64 { return s.status("VmHWM") }

// cpu is the process's user and system CPU time so far.
func (s *server) cpu() time.Duration {
	return time.Duration(proc.CPUTicks(s.cmd.Process.Pid)) * time.Second / proc.ClkTck
}

func (s *server) sample() {
	r := s.rss()
	s.mu.Lock()
	s.peak = max(s.peak, r)
	s.mu.Unlock()
}

func (s *server) peakRSS() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.peak
}

// sampleRSS reads the servers' VmRSS every 20 ms until the returned
// function is called, and once more then.
func sampleRSS(srvs ...*server) (stop func()) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		t := time.NewTicker(20 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				for _, s := range srvs {
					s.sample()
				}
			}
		}
	})
	return func() {
		close(done)
		wg.Wait()
		// A run shorter than a tick is sampled once at its end.
		for _, s := range srvs {
			s.sample()
		}
	}
}

// tusdModule is the tus module's path, in formd's build and as tusd's
// own main module.
const tusdModule = "github.com/tus/tusd/v2"

// embeddedTusd is the version of tusd the formd binary was built with.
func embeddedTusd(formdBin string) (string, error) {
	bi, err := buildinfo.ReadFile(formdBin)
	if err != nil {
		return "", fmt.Errorf("read the build of %s: %w", formdBin, err)
	}
	for _, d := range bi.Deps {
		if d.Path == tusdModule {
			if d.Replace != nil {
				return "", fmt.Errorf("%s was built with %s replaced by %s: build tusd from that and give it with -tusd", formdBin, tusdModule, d.Replace.Path)
			}
			return d.Version, nil
		}
	}
	return "", fmt.Errorf("%s has no %s in its build: is it formd?", formdBin, tusdModule)
}

// tusdVersion is the version of the tus module a tusd binary was built
// from, "" when it was not built from a released module.
func tusdVersion(bin string) (string, error) {
	bi, err := buildinfo.ReadFile(bin)
	if err != nil {
		return "", fmt.Errorf("read the build of %s: %w", bin, err)
	}
	if bi.Main.Path != tusdModule || bi.Path != tusdModule+"/cmd/tusd" {
		return "", fmt.Errorf("%s is %s, not tusd (%s/cmd/tusd)", bin, bi.Path, tusdModule)
	}
	return bi.Main.Version, nil
}

// buildTusd builds tusd's command at version into dir with go install,
// from its own module (its go.mod's versions, as the tus project
// releases it).
func buildTusd(version, dir string) (string, error) {
	cmd := exec.Command("go", "install", tusdModule+"/cmd/tusd@"+version)
	cmd.Env = append(os.Environ(), "GOBIN="+dir)
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go install %s/cmd/tusd@%s: %v\n%s", tusdModule, version, err, out)
	}
	return filepath.Join(dir, "tusd"), nil
}
