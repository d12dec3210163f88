package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// walkStep is one command of the walkthrough (docs/api.md) and what the
// text says it answers.
type walkStep struct {
	line    int      // of the command's first line in docs/api.md
	command string   // the shell text, continuation lines included
	expect  []string // the comment lines after it, without "# "
}

// readmeWalkthrough reads the first sh block under "## A walkthrough with
// curl" in docs/api.md: each command (with its continuation lines, or a
// loop to its done) and the comment lines that follow it.
// walkthroughDoc is where the walkthrough with curl is written.
const walkthroughDoc = "docs/api.md"

func readmeWalkthrough(t *testing.T) (prelude string, steps []walkStep) {
	t.Helper()
	raw, err := os.ReadFile("../../" + walkthroughDoc)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(raw), "\n")
	i := 0
	for i < len(lines) && lines[i] != "## A walkthrough with curl" {
		i++
	}
	for i < len(lines) && lines[i] != "```sh" {
		i++
	}
	if i == len(lines) {
		t.Fatal(walkthroughDoc + " has no ```sh block under \"## A walkthrough with curl\"")
	}
	assign := regexp.MustCompile(`^[A-Z]+=\S+$`)
	var cur *walkStep
	for i++; i < len(lines) && lines[i] != "```"; i++ {
		l := lines[i]
		switch {
		case strings.TrimSpace(l) == "":
			cur = nil
		case strings.HasPrefix(l, "# "):
			if cur != nil {
				cur.expect = append(cur.expect, strings.TrimPrefix(l, "# "))
			}
		case assign.MatchString(l):
			prelude += l + "\n"
		case cur != nil && len(cur.expect) == 0:
			cur.command += "\n" + l
		default:
			steps = append(steps, walkStep{line: i + 1, command: l})
			cur = &steps[len(steps)-1]
		}
	}
	return prelude, steps
}

var (
	statusLine = regexp.MustCompile(`^HTTP/1\.1 \d{3} `)
	headerLine = regexp.MustCompile(`^([A-Z][A-Za-z-]+): (\S.*)$`)
	codesLine  = regexp.MustCompile(`^(\d{3})(, \d{3})*( \(.*\))?$`)
	jsonMember = regexp.MustCompile(`"(code|status|form|key|field)":"[^"…]+"`)
)

// TestREADMEWalkthrough runs the walkthrough (docs/api.md) with curl against a
// formd started as the quick start says (formd serve --forms
// examples/forms.yaml) and compares what formd answers with what the
// text shows: status lines, the headers shown, the lists of status codes
// and the codes and statuses in the bodies shown. The text cannot drift
// from formd again.
func TestREADMEWalkthrough(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs a server")
	}
	if _, err := exec.LookPath("curl"); err != nil {
		if os.Getenv("FORMD_REQUIRE_SERVICES") != "" {
			t.Fatal("curl is needed to run the walkthrough in docs/api.md: apt-get install curl")
		}
		t.Skip("no curl on PATH")
	}
	t.Parallel()
	prelude, steps := readmeWalkthrough(t)
	dir := t.TempDir()
	forms, err := filepath.Abs("../../examples/forms.yaml")
	if err != nil {
		t.Fatal(err)
	}
	p := startFormdAsDocumented(t, buildFormd(t, dir), filepath.Join(dir, "data"), forms)
	prelude = strings.ReplaceAll(prelude, "http://127.0.0.1:8080", p.url)
	checked := 0
	for _, st := range steps {
		cmd := exec.Command("sh", "-ec", prelude+strings.ReplaceAll(st.command, "http://127.0.0.1:8080", p.url))
		var out, errOut bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errOut
		if err := cmd.Run(); err != nil {
			t.Fatalf(walkthroughDoc+":%d: %v\n%s\n%s", st.line, err, st.command, errOut.String())
		}
		got := strings.ReplaceAll(out.String(), "\r\n", "\n")
		gotLines := strings.Split(got, "\n")
		for _, want := range st.expect {
			switch {
			case statusLine.MatchString(want):
				checked++
				if gotLines[0] != want {
					t.Errorf(walkthroughDoc+":%d: the text shows %q, formd answers %q\n%s", st.line, want, gotLines[0], got)
				}
			case headerLine.MatchString(want):
				checked++
				m := headerLine.FindStringSubmatch(want)
				found := false
				for _, g := range gotLines {
					if g == "" {
						break // the end of the headers
					}
					if gm := headerLine.FindStringSubmatch(g); gm != nil && strings.EqualFold(gm[1], m[1]) &&
						(strings.Contains(m[2], "…") || strings.Contains(m[2], "<") || gm[2] == m[2]) {
						found = true
					}
				}
				if !found {
					t.Errorf(walkthroughDoc+":%d: the text shows the header %q, formd answers\n%s", st.line, want, got)
				}
			case codesLine.MatchString(want):
				checked++
				codes := strings.Split(strings.SplitN(want, " (", 2)[0], ", ")
				if g := strings.Fields(got); strings.Join(g, ", ") != strings.Join(codes, ", ") {
					t.Errorf(walkthroughDoc+":%d: the text shows %s, formd answers %s", st.line, strings.Join(codes, ", "), strings.Join(g, ", "))
				}
			case strings.HasPrefix(want, "{"):
				for _, member := range jsonMember.FindAllString(want, -1) {
					checked++
					if !strings.Contains(got, member) {
						t.Errorf(walkthroughDoc+":%d: the text shows %s in the body, formd answers\n%s", st.line, member, got)
					}
				}
			}
		}
	}
	if len(steps) < 8 || checked < 15 {
		t.Fatalf("read %d steps and %d checks from the walkthrough in "+walkthroughDoc+": the parser no longer reads it", len(steps), checked)
	}
	t.Logf("%d commands, %d checks against "+walkthroughDoc, len(steps), checked)
}

// startFormdAsDocumented starts formd serve with the quick start's
// settings — the default rate limit, not startFormd's "off" — on a free
// port and its own data.
func startFormdAsDocumented(t *testing.T, bin, data, forms string) *proc {
	t.Helper()
	return startFormd(t, bin, data, forms, "--rate-limit", "600/1m,burst=600")
}

// TestREADMENatsServerIsThePinnedOne: docs/instances.md tells
// people to install the nats-server go.mod pins (the one formd is tested
// against), not an older one that refuses its configuration.
func TestREADMENatsServerIsThePinnedOne(t *testing.T) {
	t.Parallel()
	readme, err := os.ReadFile("../../docs/instances.md")
	if err != nil {
		t.Fatal(err)
	}
	gomod, err := os.ReadFile("../../go.mod")
	if err != nil {
		t.Fatal(err)
	}
	pin := regexp.MustCompile(`(?m)^\s*github\.com/nats-io/nats-server/v2 (v\S+)`).FindSubmatch(gomod)
	if pin == nil {
		t.Fatal("go.mod does not require github.com/nats-io/nats-server/v2")
	}
	installs := regexp.MustCompile(`go install github\.com/nats-io/nats-server/v2@(v\S+)`).FindAllSubmatch(readme, -1)
	if len(installs) == 0 {
		t.Fatal("docs/instances.md does not say how to install nats-server (go install github.com/nats-io/nats-server/v2@…)")
	}
	for _, m := range installs {
		if string(m[1]) != string(pin[1]) {
			t.Errorf("docs/instances.md installs nats-server %s, go.mod pins %s", m[1], pin[1])
		}
	}
}
