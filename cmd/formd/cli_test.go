package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// Bad input on the command line gets a message that names the setting or
// the file and says what would be right, and a non-zero exit.
func TestCLIErrors(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.yaml")
	good := filepath.Join(dir, "good.yaml")
	os.WriteFile(bad, []byte("id: fair\nfields: [{name: n, type: number, min: 5, max: 4}]\n"), 0o600)
	os.WriteFile(good, []byte("id: fair\nfields: [{name: n, type: text}]\n"), 0o600)
	hooked := filepath.Join(dir, "hooked.yaml")
	os.WriteFile(hooked, []byte("id: hooked\nfields: [{name: n, type: text}]\nnotify: {webhooks: [{url: 'http://127.0.0.1:9/x', secret: whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw}]}\n"), 0o600)
	cases := []struct {
		args []string
		code int
		want string
	}{
		{[]string{"nope"}, 2, `unknown command "nope"`},
		{[]string{"serve", "--max-body", "huge"}, 2, `setting max-body (--max-body, FORMD_MAX_BODY; from --max-body): "huge" is not a size`},
		{[]string{"serve", "--store", "mysql://db"}, 2, "use sqlite or a postgres:// URL"},
		{[]string{"forms", "check", "-f", bad}, 1, `bad.yaml: form "fair": field "n": min 5 is greater than max 4`},
		{[]string{"forms", "check"}, 2, "-f FILE is required"},
		{[]string{"forms", "check", "-f", good}, 0, "1 form(s) valid: fair"},
		{[]string{"forms", "check", good}, 0, "1 form(s) valid: fair"},
		{[]string{"forms", "check", good}, 0, `warning: form "fair" lists no origins`},
		{[]string{"forms", "check", bad}, 1, "(line 2)"},
		{[]string{"serve", "--data", filepath.Join(dir, "s1"), "--addr", "127.0.0.1:0", "--forms", filepath.Join(dir, "missing.yaml")}, 1, "--forms " + filepath.Join(dir, "missing.yaml") + " (FORMD_FORMS): read forms: open"},
		{[]string{"serve", "--data", filepath.Join(dir, "s2"), "--addr", "127.0.0.1:0", "--forms", bad}, 1, `min 5 is greater than max 4 (line 2)`},
		{[]string{"forms", "apply", "-f", good, "--data", filepath.Join(dir, "data")}, 0, "applied 1 form(s): fair"},
		{[]string{"export", "--data", filepath.Join(dir, "data"), "--form", "other"}, 1, `no form "other" in the store`},
		{[]string{"export", "--data", filepath.Join(dir, "data"), "--form", "fair", "--format", "pdf"}, 2, `--format "pdf" is not known; use csv, jsonl, xlsx`},
		{[]string{"export", "--data", filepath.Join(dir, "data"), "--form", "fair", "--format", "csv"}, 0, `"id","key","status","received_at","n","extra"`},
		{[]string{"export", "--data", filepath.Join(dir, "data"), "--form", "fair", "--header", "title"}, 2, `--header "title" is not known; use names or labels`},
		{[]string{"export", "--data", filepath.Join(dir, "data"), "--form", "fair", "--for", "people", "--lang", "zh", "--zone", "Asia/Shanghai"}, 0, "\uFEFF\"编号\",\"状态\",\"提交时间 (Asia/Shanghai)\",\"n\",\"其他内容\"\r\n"},
		{[]string{"export", "--data", filepath.Join(dir, "data"), "--form", "fair", "--for", "everyone"}, 2, `--for "everyone" is not known; use machines or people`},
		{[]string{"export", "--data", filepath.Join(dir, "data"), "--form", "fair", "--for", "people", "--zone", "Mars/Olympus"}, 2, `--zone "Mars/Olympus" is not a time zone`},
		{[]string{"deliveries"}, 2, "formd deliveries log --entry ID"},
		{[]string{"deliveries", "log", "--data", filepath.Join(dir, "data")}, 2, "--entry ID is required"},
		{[]string{"deliveries", "log", "--data", filepath.Join(dir, "data"), "--entry", "nope"}, 0, "no deliveries for this entry"},
		{[]string{"deliveries", "redeliver", "--data", filepath.Join(dir, "data")}, 2, "name what to redeliver"},
		{[]string{"deliveries", "redeliver", "--data", filepath.Join(dir, "data"), "--form", "fair"}, 0, "0 deliveries will be sent again"},
		{[]string{"deliveries", "disabled", "--data", filepath.Join(dir, "data")}, 0, "no endpoint is disabled"},
		{[]string{"serve", "--smtp", "http://mail.example.org"}, 2, "--smtp"},
		{[]string{"serve", "--webhook-allow", "not-an-address"}, 2, "webhook-allow"},
		{[]string{"forms", "check", hooked}, 1, "notify.webhooks[0].url"},
		{[]string{"forms", "check", "--webhook-allow", "127.0.0.0/8", hooked}, 0, "1 form(s) valid"},
		{[]string{"replay", "--since", "yesterday"}, 2, `--since "yesterday" is not an RFC 3339 time`},
		{[]string{"version"}, 0, "formd "},
	}
	for _, tc := range cases {
		var out, errb bytes.Buffer
		code := run(tc.args, &out, &errb)
		got := out.String() + errb.String()
		if code != tc.code || !strings.Contains(got, tc.want) {
			t.Errorf("formd %s: exit %d, output %q; want exit %d and %q", strings.Join(tc.args, " "), code, got, tc.code, tc.want)
		}
	}
}

// A second server on the same data directory is refused with a message
// that says why, instead of both delivering the same journal.
func TestSecondServerOnSameData(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs a server")
	}
	t.Parallel()
	dir := t.TempDir()
	bin := buildFormd(t, dir)
	data := filepath.Join(dir, "data")
	forms := writeForms(t, dir, crashForms)
	first := startFormd(t, bin, data, forms)
	defer first.stop(t)
	var out bytes.Buffer
	cmd := exec.Command(bin, "serve", "--data", data, "--addr", "127.0.0.1:0")
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	if err == nil || !strings.Contains(out.String(), "another formd serve is running on --data") {
		t.Fatalf("second server: %v\n%s", err, out.String())
	}
}

// forms check warns of a form without origins (issue 34: a page of
// another site meets origin-not-allowed), and only of such a form.
func TestFormsCheckWarnsWithoutOrigins(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	file := filepath.Join(dir, "two.yaml")
	os.WriteFile(file, []byte("id: open\nfields: [{name: n, type: text}]\n---\nid: club\nfields: [{name: n, type: text}]\norigins: [https://club.example.org]\n"), 0o600)
	var out, errb bytes.Buffer
	if code := run([]string{"forms", "check", file}, &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s%s", code, out.String(), errb.String())
	}
	if got := out.String(); !strings.Contains(got, `warning: form "open" lists no origins`) || strings.Contains(got, `form "club" lists`) {
		t.Errorf("output %q: want a warning for open only", got)
	}
}

// A wrong flag is said in two lines, the error and where the flags are
// listed, not followed by every flag (issue 34); --help still lists them.
func TestWrongFlagIsTwoLines(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{{"serve", "--nope"}, {"export", "--fromat", "csv"}, {"backup", "verify", "--x"}, {"users", "add", "--rol", "owner"}} {
		var out, errb bytes.Buffer
		code := run(args, &out, &errb)
		lines := strings.Split(strings.TrimSpace(errb.String()), "\n")
		if code != 2 || len(lines) != 2 || !strings.Contains(lines[0], "flag provided but not defined") || !strings.Contains(lines[1], "--help") {
			t.Errorf("formd %s: exit %d, stderr %q; want exit 2, the error and a line pointing to --help", strings.Join(args, " "), code, errb.String())
		}
	}
	var out, errb bytes.Buffer
	if code := run([]string{"serve", "--help"}, &out, &errb); code != 0 || strings.Count(out.String(), "\n") < 20 {
		t.Errorf("serve --help: exit %d, %d lines", code, strings.Count(out.String(), "\n"))
	}
}

// An export for people of a form with files needs --public-url: people
// cannot open a relative link (issue 34).
func TestExportForPeopleNeedsPublicURL(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	def := filepath.Join(dir, "photo.yaml")
	os.WriteFile(def, []byte("id: exam\nfields: [{name: photo, type: file}]\n"), 0o600)
	data := filepath.Join(dir, "data")
	var out, errb bytes.Buffer
	if code := run([]string{"forms", "apply", "-f", def, "--data", data}, &out, &errb); code != 0 {
		t.Fatalf("forms apply: %d %s", code, errb.String())
	}
	errb.Reset()
	if code := run([]string{"export", "--data", data, "--form", "exam", "--for", "people"}, &out, &errb); code != 2 || !strings.Contains(errb.String(), "--for people needs --public-url") {
		t.Errorf("without --public-url: exit %d, %q", code, errb.String())
	}
	out.Reset()
	errb.Reset()
	if code := run([]string{"export", "--data", data, "--form", "exam", "--for", "people", "--public-url", "https://forms.example.org"}, &out, &errb); code != 0 || !strings.HasPrefix(out.String(), "\uFEFF") {
		t.Errorf("with --public-url: exit %d, %q %q", code, out.String(), errb.String())
	}
}
