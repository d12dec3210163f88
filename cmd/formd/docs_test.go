package main

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"unicode"
)

// The docs are README.md and docs/*.md: what a newcomer reads and where
// the rest moved (issue 34). These tests keep what they name true: every
// relative link goes to a file that is there (and to a heading that is
// there, for a link into a Markdown file), every page is in the index, and
// every `formd <command> --flag` they show is a flag that command has.

// docFiles lists README.md and docs/*.md, relative to the repository.
func docFiles(t *testing.T, root string) []string {
	t.Helper()
	files := []string{"README.md"}
	more, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	if len(more) < 5 {
		t.Fatalf("%d files in docs/*.md: the docs are not where this test looks", len(more))
	}
	for _, m := range more {
		rel, _ := filepath.Rel(root, m)
		files = append(files, filepath.ToSlash(rel))
	}
	return files
}

// mdLink is a Markdown link or image: [text](target) or ![alt](target).
var mdLink = regexp.MustCompile(`!?\[[^\]]*\]\(([^)\s]+)(?:\s+"[^"]*")?\)`)

// prose is a Markdown text without its fenced code blocks and inline
// code spans (each replaced by blanks, so line numbers hold), where a
// link is a link.
func prose(md string) string {
	return regexp.MustCompile("`[^`\n]*`").ReplaceAllStringFunc(noFences(md), func(c string) string {
		return strings.Repeat(" ", len(c))
	})
}

// noFences blanks the lines of fenced code blocks.
func noFences(md string) string {
	lines := strings.Split(md, "\n")
	fence := false
	for i, l := range lines {
		if strings.HasPrefix(strings.TrimSpace(l), "```") {
			fence = !fence
			lines[i] = ""
			continue
		}
		if fence {
			lines[i] = ""
		}
	}
	return strings.Join(lines, "\n")
}

// anchors are the ids GitHub gives a Markdown file's headings: lower case,
// letters, digits, spaces, '-' and '_' kept, spaces made '-', a repeated
// one numbered.
func anchors(md string) map[string]bool {
	ids := map[string]bool{}
	seen := map[string]int{}
	for _, l := range strings.Split(noFences(md), "\n") {
		m := regexp.MustCompile(`^#{1,6} (.+?)\s*#*\s*$`).FindStringSubmatch(l)
		if m == nil {
			continue
		}
		var b strings.Builder
		for _, r := range strings.ToLower(m[1]) {
			switch {
			case unicode.IsLetter(r) || unicode.IsDigit(r) || r == '-' || r == '_':
				b.WriteRune(r)
			case r == ' ':
				b.WriteRune('-')
			}
		}
		id := b.String()
		if n, ok := seen[id]; ok {
			seen[id] = n + 1
			id += "-" + strconv.Itoa(n+1)
		} else {
			seen[id] = 0
		}
		ids[id] = true
	}
	return ids
}

// brokenLinks names every relative link of the docs under root whose file,
// or whose heading in a Markdown file, is not there.
func brokenLinks(t *testing.T, root string) (broken []string, checked int) {
	t.Helper()
	cache := map[string]map[string]bool{}
	headingsOf := func(path string) (map[string]bool, error) {
		if ids, ok := cache[path]; ok {
			return ids, nil
		}
		raw, err := os.ReadFile(path)
		if err != nil {
			return nil, err
		}
		cache[path] = anchors(string(raw))
		return cache[path], nil
	}
	for _, f := range docFiles(t, root) {
		raw, err := os.ReadFile(filepath.Join(root, f))
		if err != nil {
			t.Fatal(err)
		}
		text := prose(string(raw))
		for _, m := range mdLink.FindAllStringSubmatchIndex(text, -1) {
			target := text[m[2]:m[3]]
			line := 1 + strings.Count(text[:m[0]], "\n")
			if regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9+.-]*:`).MatchString(target) || strings.HasPrefix(target, "/") {
				continue // a URL, or a path on the server (/admin/)
			}
			checked++
			path, anchor, _ := strings.Cut(target, "#")
			file := filepath.Join(root, f)
			if path != "" {
				file = filepath.Join(root, filepath.Dir(f), path)
			}
			st, err := os.Stat(file)
			if err != nil {
				broken = append(broken, f+":"+strconv.Itoa(line)+": "+target+": no such file")
				continue
			}
			if anchor == "" {
				continue
			}
			if st.IsDir() || !strings.HasSuffix(file, ".md") {
				broken = append(broken, f+":"+strconv.Itoa(line)+": "+target+": an anchor into a file that is not Markdown")
				continue
			}
			ids, err := headingsOf(file)
			if err != nil {
				t.Fatal(err)
			}
			if !ids[anchor] {
				broken = append(broken, f+":"+strconv.Itoa(line)+": "+target+": no heading #"+anchor+" there")
			}
		}
	}
	return broken, checked
}

func TestDocsLinksResolve(t *testing.T) {
	t.Parallel()
	broken, checked := brokenLinks(t, "../..")
	if checked < 50 {
		t.Fatalf("checked %d relative links in README.md and docs/*.md: the parser no longer finds them", checked)
	}
	for _, b := range broken {
		t.Error(b)
	}
	t.Logf("%d relative links checked", checked)
}

// TestDocsLinksCanFail: a link to a file that is not there, and one to a
// heading that is not there, are both found.
func TestDocsLinksCanFail(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "docs"), 0o755); err != nil {
		t.Fatal(err)
	}
	write := func(name, text string) {
		if err := os.WriteFile(filepath.Join(root, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("README.md", "# x\n\nSee [a](docs/a.md#one), [gone](docs/gone.md) and `[not a link](nowhere.md)`.\n")
	write("docs/a.md", "# A\n\n## One\n\n[back](../README.md#x) and [wrong](../README.md#y)\n\n```\n[code](nowhere.md)\n```\n")
	for _, n := range []string{"b", "c", "d", "e"} {
		write("docs/"+n+".md", "# "+n+"\n")
	}
	broken, checked := brokenLinks(t, root)
	want := []string{
		"README.md:3: docs/gone.md: no such file",
		"docs/a.md:5: ../README.md#y: no heading #y there",
	}
	wantFound(t, checked, broken, 4, want)
}

// wantFound checks what a docs check of a made-up page found: how many
// it checked and the problems, in order.
func wantFound(t *testing.T, checked int, found []string, wantChecked int, want []string) {
	t.Helper()
	if checked != wantChecked || strings.Join(found, "\n") != strings.Join(want, "\n") {
		t.Errorf("checked %d, found\n%s\nwant %d checked, found\n%s", checked, strings.Join(found, "\n"), wantChecked, strings.Join(want, "\n"))
	}
}

// TestDocsIndexNamesEveryPage: docs/README.md links every page in docs/,
// so that a page added is a page found (add it under "More").
func TestDocsIndexNamesEveryPage(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile("../../docs/README.md")
	if err != nil {
		t.Fatal(err)
	}
	linked := map[string]bool{}
	for _, m := range mdLink.FindAllStringSubmatch(prose(string(raw)), -1) {
		path, _, _ := strings.Cut(m[1], "#")
		linked[path] = true
	}
	for _, f := range docFiles(t, "../..") {
		name := strings.TrimPrefix(f, "docs/")
		if f == "README.md" || name == "README.md" {
			continue
		}
		if !linked[name] {
			t.Errorf("docs/README.md does not link %s: add it to its list (under More)", f)
		}
	}
}

// docCommand is one formd command line the docs show.
type docCommand struct {
	where string   // file:line
	args  []string // after "formd"
}

// formdCommands reads the formd command lines of a Markdown text: in code
// blocks (fenced or indented) and inline code spans, each "formd <word>"
// with the words after it up to the end of its shell command.
func formdCommands(file, md string) []docCommand {
	type span struct {
		line int
		text string
	}
	var spans []span
	lines := strings.Split(md, "\n")
	fence := false
	for i := 0; i < len(lines); i++ {
		l := lines[i]
		if strings.HasPrefix(strings.TrimSpace(l), "```") {
			fence = !fence
			continue
		}
		if fence || strings.HasPrefix(l, "    ") {
			start, text := i, l
			for strings.HasSuffix(strings.TrimSpace(text), `\`) && i+1 < len(lines) {
				i++
				text = strings.TrimSuffix(strings.TrimSpace(text), `\`) + " " + lines[i]
			}
			spans = append(spans, span{start + 1, text})
		}
	}
	fence = false
	var paragraph []string
	flush := func(end int) {
		text := strings.Join(paragraph, "\n")
		for _, m := range regexp.MustCompile("`([^`]+)`").FindAllStringSubmatchIndex(text, -1) {
			line := end - len(paragraph) + 1 + strings.Count(text[:m[0]], "\n")
			spans = append(spans, span{line, strings.ReplaceAll(text[m[2]:m[3]], "\n", " ")})
		}
		paragraph = nil
	}
	for i, l := range lines {
		if strings.HasPrefix(strings.TrimSpace(l), "```") {
			fence = !fence
			flush(i)
			continue
		}
		if fence || strings.TrimSpace(l) == "" || strings.HasPrefix(l, "    ") {
			flush(i)
			continue
		}
		paragraph = append(paragraph, l)
	}
	flush(len(lines))

	quoted := regexp.MustCompile(`"[^"]*"|'[^']*'`)
	sep := regexp.MustCompile(`&&|\|\||[|;&()<>]|\s#`)
	start := regexp.MustCompile(`(?:^|[\s/=])formd\s+([a-z][a-z-]*)`)
	var out []docCommand
	for _, s := range spans {
		for _, part := range sep.Split(quoted.ReplaceAllString(s.text, "Q"), -1) {
			m := start.FindStringSubmatchIndex(part)
			if m == nil {
				continue
			}
			if _, ok := commands[part[m[2]:m[3]]]; !ok {
				continue
			}
			args := strings.Fields(part[m[3]:])
			out = append(out, docCommand{file + ":" + strconv.Itoa(s.line), append([]string{part[m[2]:m[3]]}, args...)})
		}
	}
	return out
}

// flagsOf runs "formd <path> -h" and reads the flags its usage lists.
func flagsOf(path []string) (flags map[string]bool, usage string) {
	var out bytes.Buffer
	run(append(append([]string{}, path...), "-h"), &out, &out)
	flags = map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^\s+--?([a-zA-Z0-9][a-zA-Z0-9-]*)`).FindAllStringSubmatch(out.String(), -1) {
		flags[m[1]] = true
	}
	return flags, out.String()
}

// subcommands are the commands whose first word names a flag set of its
// own. Only these are asked "formd <command> <word> -h": any other
// command would take the word as an argument and run (serve would serve).
var subcommands = map[string][]string{
	"forms":      {"apply", "check", "export"},
	"backup":     {"verify"},
	"deliveries": {"log", "redeliver", "disabled", "enable"},
	"users":      {"add", "list", "passwd", "disable", "token", "revoke-token"},
}

// commandPath is the command a line runs: "forms apply", or "backup" for
// "backup --to DIR" but "backup verify" for "backup verify DIR".
func commandPath(args []string) []string {
	if len(args) > 1 && slices.Contains(subcommands[args[0]], args[1]) {
		return args[:2]
	}
	return args[:1]
}

// badFlags names each flag of a docs command line that its command does
// not have.
func badFlags(cmds []docCommand) (bad []string, checked int) {
	flagTok := regexp.MustCompile(`^--?([a-zA-Z][a-zA-Z0-9-]*)(=.*)?$`)
	sets := map[string]map[string]bool{}
	for _, c := range cmds {
		path := commandPath(c.args)
		key := strings.Join(path, " ")
		if sets[key] == nil {
			sets[key], _ = flagsOf(path)
		}
		for _, a := range c.args[len(path):] {
			m := flagTok.FindStringSubmatch(strings.Trim(a, ",.:`*"))
			if m == nil || m[1] == "h" || m[1] == "help" {
				continue
			}
			checked++
			if !sets[key][m[1]] {
				bad = append(bad, c.where+": formd "+key+" has no flag -"+m[1]+" (formd "+strings.Join(c.args, " ")+")")
			}
		}
	}
	return bad, checked
}

func TestDocsNameRealFlags(t *testing.T) {
	var cmds []docCommand
	for _, f := range docFiles(t, "../..") {
		raw, err := os.ReadFile(filepath.Join("../..", f))
		if err != nil {
			t.Fatal(err)
		}
		cmds = append(cmds, formdCommands(f, string(raw))...)
	}
	bad, checked := badFlags(cmds)
	if len(cmds) < 30 || checked < 50 {
		t.Fatalf("read %d formd commands with %d flags from the docs: the parser no longer finds them", len(cmds), checked)
	}
	for _, b := range bad {
		t.Error(b)
	}
	names := map[string]bool{}
	for _, c := range cmds {
		names[c.args[0]] = true
	}
	var seen []string
	for n := range names {
		seen = append(seen, n)
	}
	sort.Strings(seen)
	if testing.Verbose() {
		for _, c := range cmds {
			t.Logf("%s: formd %s", c.where, strings.Join(c.args, " "))
		}
	}
	t.Logf("%d formd command lines, %d flags checked; commands shown: %s", len(cmds), checked, strings.Join(seen, " "))
}

// TestDocsNameRealSettings: a setting the docs name on its own, as
// `--upload-expiry` or `--public-url URL`, is a flag of some formd command.
func TestDocsNameRealSettings(t *testing.T) {
	all := map[string]bool{}
	for name := range commands {
		paths := [][]string{{name}}
		for _, sub := range subcommands[name] {
			paths = append(paths, []string{name, sub})
		}
		for _, path := range paths {
			flags, _ := flagsOf(path)
			for f := range flags {
				all[f] = true
			}
		}
	}
	bare := regexp.MustCompile("`--([a-z][a-z0-9-]*)(?:[= ][^`]*)?`")
	n := 0
	for _, f := range docFiles(t, "../..") {
		raw, err := os.ReadFile(filepath.Join("../..", f))
		if err != nil {
			t.Fatal(err)
		}
		text := noFences(string(raw))
		for _, m := range bare.FindAllStringSubmatchIndex(text, -1) {
			n++
			if name := text[m[2]:m[3]]; !all[name] {
				t.Errorf("%s:%d: --%s is no flag of any formd command", f, 1+strings.Count(text[:m[0]], "\n"), name)
			}
		}
	}
	if n < 50 {
		t.Fatalf("%d settings named in the docs: the parser no longer finds them", n)
	}
	t.Logf("%d settings named in the docs, each a flag", n)
}

// TestDocsFlagsCanFail: a flag serve does not have, one of a sub-command
// given to its parent, and a real one are told apart.
func TestDocsFlagsCanFail(t *testing.T) {
	md := "Run `formd serve --data ./d --no-such-flag`.\n\n" +
		"```sh\nformd forms apply -f f.yaml \\\n  --yes --form x   # --form is export's\nformd backup verify /b && formd backup --to /b\n```\n"
	bad, checked := badFlags(formdCommands("x.md", md))
	sort.Strings(bad)
	want := []string{
		"x.md:1: formd serve has no flag -no-such-flag (formd serve --data ./d --no-such-flag)",
		"x.md:4: formd forms apply has no flag -form (formd forms apply -f f.yaml --yes --form x)",
	}
	wantFound(t, checked, bad, 6, want)
}

// TestCodeNamesDocsThatExist: messages and comments in the Go code that
// send the reader to docs/<page>.md name a page that is there.
func TestCodeNamesDocsThatExist(t *testing.T) {
	t.Parallel()
	page := regexp.MustCompile(`docs/[a-z0-9-]+\.md`)
	n := 0
	err := filepath.WalkDir("../..", func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "node_modules" || d.Name() == ".git" || d.Name() == "testdata") {
			return filepath.SkipDir
		}
		// Tests read the pages they name and fail on their own.
		if d.IsDir() || !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return nil
		}
		raw, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		for _, m := range page.FindAllString(string(raw), -1) {
			n++
			if _, err := os.Stat(filepath.Join("../..", m)); err != nil {
				t.Errorf("%s names %s, which is not there", p, m)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n < 5 {
		t.Fatalf("%d names of docs/ pages in the Go code: the messages that send readers there are gone", n)
	}
}

// TestSubcommandsAreTheCommands: each word in subcommands is one its
// command knows (its usage names "formd <command> <word>").
func TestSubcommandsAreTheCommands(t *testing.T) {
	for name, subs := range subcommands {
		if _, ok := commands[name]; !ok {
			t.Errorf("subcommands names %q, which is no formd command", name)
		}
		for _, sub := range subs {
			if _, usage := flagsOf([]string{name, sub}); !strings.Contains(usage, "formd "+name+" "+sub) {
				t.Errorf("formd %s %s -h does not print its usage:\n%s", name, sub, usage)
			}
		}
	}
}

// TestDocsPagesHaveContents: a page of docs/ longer than a screen or two
// opens with a contents list that names each of its sections.
func TestDocsPagesHaveContents(t *testing.T) {
	t.Parallel()
	for _, f := range docFiles(t, "../..") {
		if f == "README.md" {
			continue
		}
		raw, err := os.ReadFile(filepath.Join("../..", f))
		if err != nil {
			t.Fatal(err)
		}
		if strings.Count(string(raw), "\n") < 80 {
			continue
		}
		if problem := contentsProblem(string(raw)); problem != "" {
			t.Errorf("%s: %s", f, problem)
		}
	}
}

// contentsProblem says what is wrong with a page's contents list: missing,
// or not naming one of its "## " sections.
func contentsProblem(md string) string {
	text := noFences(md)
	i := strings.Index(text, "\n## Contents\n")
	if i < 0 {
		return `no "## Contents" list`
	}
	list := text[i+len("\n## Contents\n"):]
	if j := strings.Index(list, "\n## "); j >= 0 {
		list = list[:j]
	}
	for _, m := range regexp.MustCompile(`(?m)^## (.+)$`).FindAllStringSubmatch(text, -1) {
		if m[1] == "Contents" {
			continue
		}
		ids := anchors("## " + m[1])
		for id := range ids {
			if !strings.Contains(list, "(#"+id+")") {
				return "its contents do not list the section " + m[1]
			}
		}
	}
	return ""
}

func TestDocsContentsCanFail(t *testing.T) {
	t.Parallel()
	for md, want := range map[string]string{
		"# A\n\n## One\n": `no "## Contents" list`,
		"# A\n\n## Contents\n\n- [One](#one)\n\n## One\n\n## Two\n":             "its contents do not list the section Two",
		"# A\n\n## Contents\n\n- [One](#one)\n\n## One\n```\n## Not one\n```\n": "",
	} {
		if got := contentsProblem(md); got != want {
			t.Errorf("%q: %q, want %q", md, got, want)
		}
	}
}

// TestQuickStartIsWhatCIRuns: the README's quick start has its two
// commands — run formd with the embedded defaults, run the tests — and
// .ci/run runs that same test command.
func TestQuickStartIsWhatCIRuns(t *testing.T) {
	t.Parallel()
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	s := string(readme)
	i := strings.Index(s, "\n## Quick start\n")
	if i < 0 {
		t.Fatal(`README.md has no "## Quick start"`)
	}
	qs := s[i+1:]
	if j := strings.Index(qs[3:], "\n## "); j >= 0 {
		qs = qs[:j+3]
	}
	const runIt, testIt = "go run ./cmd/formd serve --forms examples/forms.yaml", "go test ./..."
	for _, c := range []string{runIt, testIt} {
		if !strings.Contains(qs, "\n    "+c+"\n") {
			t.Errorf("README.md's quick start does not show the command %q on a line of its own", c)
		}
	}
	ci, err := os.ReadFile("../../.ci/run")
	if err != nil {
		t.Fatal(err)
	}
	step := strings.Index(string(ci), `step "tests (the README's test command)"`+"\n")
	if step < 0 || !strings.HasPrefix(string(ci)[step:], `step "tests (the README's test command)"`+"\n"+testIt+"\n") {
		t.Errorf(".ci/run does not run %q in its step \"tests (the README's test command)\"", testIt)
	}
}
