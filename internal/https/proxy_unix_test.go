//go:build unix

package https_test

import (
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/formd/formd/internal/config"
	"github.com/formd/formd/internal/poll"
)

// proxyBinary is Debian's caddy or nginx (.ci/run installs both); the
// test is skipped without it, unless FORMD_REQUIRE_SERVICES=1.
func proxyBinary(t *testing.T, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err == nil {
		return p
	}
	how := fmt.Sprintf("no %s on PATH (apt-get install %s)", name, map[string]string{"caddy": "caddy", "nginx": "nginx-light"}[name])
	if os.Getenv("FORMD_REQUIRE_SERVICES") == "1" {
		t.Fatal("FORMD_REQUIRE_SERVICES=1 and " + how)
	}
	t.Skip(how)
	return ""
}

// The configurations are docs/deploying.md's (behind Caddy or nginx),
// on test ports and with a test certificate.
const caddyfile = `{
	admin off
	skip_install_trust
	storage file_system {{dir}}/caddy
	http_port {{http}}
	https_port {{https}}
}

forms.example.test:{{https}} {
	tls {{cert}} {{key}}
	reverse_proxy {{formd}}
}
`

const nginxConf = `daemon off;
pid {{dir}}/nginx.pid;
error_log stderr;
user root;
worker_processes 1;
events {}
http {
	access_log off;
	client_body_temp_path {{dir}}/body;
	proxy_temp_path {{dir}}/proxy;
	fastcgi_temp_path {{dir}}/fastcgi;
	uwsgi_temp_path {{dir}}/uwsgi;
	scgi_temp_path {{dir}}/scgi;

	server {
		listen 127.0.0.1:{{http}};
		server_name forms.example.test;
		return 308 https://$host:{{https}}$request_uri;
	}
	server {
		listen 127.0.0.1:{{https}} ssl http2;
		server_name forms.example.test;
		ssl_certificate {{cert}};
		ssl_certificate_key {{key}};

		client_max_body_size 20m;
		location / {
			proxy_pass http://{{formd}};
			proxy_http_version 1.1;
			proxy_set_header Host $http_host;
			proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;
			proxy_set_header X-Forwarded-Proto $scheme;
			proxy_read_timeout 60s;
			proxy_buffering off;
		}
	}
}
`

// TestBehindCaddyAndNginx: formd behind each proxy, as docs/deploying.md sets it
// up (--trusted-proxies 127.0.0.1), over the proxy's HTTPS: a submission
// is stored, setup gives a Secure cookie and HSTS, the status Location is
// one the browser resolves on the proxy's https origin, and plain HTTP is
// redirected to https.
func TestBehindCaddyAndNginx(t *testing.T) {
	for _, tc := range []struct {
		proxy, conf string
		args        func(conf string) []string
	}{
		{"caddy", caddyfile, func(conf string) []string { return []string{"run", "--config", conf, "--adapter", "caddyfile"} }},
		{"nginx", nginxConf, func(conf string) []string { return []string{"-c", conf, "-e", "stderr"} }},
	} {
		t.Run(tc.proxy, func(t *testing.T) {
			t.Parallel()
			bin := proxyBinary(t, tc.proxy)
			r := startListening(t, func(c *config.Config) {
				var err error
				if c.TrustedProxies, err = parseProxies("127.0.0.1"); err != nil {
					t.Fatal(err)
				}
			})
			ca := newTestCA(t)
			dir := t.TempDir()
			cert, key := ca.leaf(t, 1, time.Now().Add(time.Hour), "forms.example.test")
			os.WriteFile(filepath.Join(dir, "cert.pem"), cert, 0o600)
			os.WriteFile(filepath.Join(dir, "key.pem"), key, 0o600)
			httpAddr, httpsAddr := freeAddr(t), freeAddr(t)
			conf := strings.NewReplacer("{{dir}}", dir, "{{http}}", fmt.Sprint(mustPort(t, httpAddr)), "{{https}}", fmt.Sprint(mustPort(t, httpsAddr)),
				"{{cert}}", filepath.Join(dir, "cert.pem"), "{{key}}", filepath.Join(dir, "key.pem"), "{{formd}}", r.Public.Addr().String()).Replace(tc.conf)
			confFile := filepath.Join(dir, tc.proxy+".conf")
			os.WriteFile(confFile, []byte(conf), 0o600)
			cmd := exec.Command(bin, tc.args(confFile)...)
			cmd.Env = append(os.Environ(), "HOME="+dir, "XDG_DATA_HOME="+dir, "XDG_CONFIG_HOME="+dir)
			var mu sync.Mutex
			var logs strings.Builder
			cmd.Stdout = writerFunc(func(p []byte) (int, error) { mu.Lock(); defer mu.Unlock(); return logs.Write(p) })
			cmd.Stderr = cmd.Stdout
			// nginx forks workers: its own process group, ended whole.
			cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
			cmd.WaitDelay = 5 * time.Second
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() {
				syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
				cmd.Wait()
				mu.Lock()
				t.Logf("%s:\n%s", tc.proxy, logs.String())
				mu.Unlock()
			})
			base := "https://forms.example.test" + httpsAddr[strings.LastIndexByte(httpsAddr, ':'):]
			client := tlsClient(t, ca.pool(), httpsAddr)
			poll.Until(t, tc.proxy+" to answer", 20*time.Second, func() bool {
				resp, err := client.Get(base + "/healthz")
				if err != nil {
					return false
				}
				resp.Body.Close()
				return resp.StatusCode == 200
			})

			resp := submit(t, client, base)
			if loc := resp.Header.Get("Location"); !strings.HasPrefix(loc, "/v1/forms/signup/submissions/") {
				t.Errorf("status Location %q, want a path on the proxy's origin", loc)
			}
			if resp.Header.Get("Strict-Transport-Security") == "" {
				t.Error("no HSTS through the proxy's https")
			}
			setup := setUp(t, client, base, r.s.SetupCode, http.Header{"Origin": {base}})
			if c := sessionCookie(t, setup); !c.Secure {
				t.Error("session cookie not Secure behind the proxy's https")
			}

			plain := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
			req, _ := http.NewRequest("GET", "http://"+httpAddr+"/admin/", nil)
			req.Host = "forms.example.test"
			rr, err := plain.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			rr.Body.Close()
			if loc := rr.Header.Get("Location"); rr.StatusCode/100 != 3 || !strings.HasPrefix(loc, "https://forms.example.test") {
				t.Errorf("plain HTTP to the proxy: %d to %q, want a redirect to https", rr.StatusCode, loc)
			}
		})
	}
}
