package main

import (
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestChangelogNamesReleases: CHANGELOG.md's headings are releases people
// can name (issue 34 item 6) — "## Unreleased" at most once and first, then
// "## vX.Y.Z — YYYY-MM-DD", newest first, each number and date above the
// next — and the deploy commands download the newest of them, so that the
// docs never name a release the changelog does not have. scripts/version.sh
// reads the same headings to name a build.
func TestChangelogNamesReleases(t *testing.T) {
	raw, err := os.ReadFile("../../CHANGELOG.md")
	if err != nil {
		t.Fatal(err)
	}
	heading := regexp.MustCompile(`^## (v(\d+)\.(\d+)\.(\d+)) — (\d{4}-\d{2}-\d{2})$`)
	type release struct {
		name string
		num  [3]int
		date time.Time
	}
	var releases []release
	for i, line := range strings.Split(string(raw), "\n") {
		if !strings.HasPrefix(line, "## ") {
			continue
		}
		if line == "## Unreleased" {
			if len(releases) > 0 {
				t.Errorf("line %d: ## Unreleased below a release; it is the newest heading or none", i+1)
			}
			continue
		}
		m := heading.FindStringSubmatch(line)
		if m == nil {
			t.Errorf("line %d: %q is not a release heading (## vX.Y.Z — YYYY-MM-DD)", i+1, line)
			continue
		}
		var r release
		r.name = m[1]
		for k := range 3 {
			r.num[k], _ = strconv.Atoi(m[2+k])
		}
		if r.date, err = time.Parse(time.DateOnly, m[5]); err != nil {
			t.Errorf("line %d: %v", i+1, err)
		}
		if n := len(releases); n > 0 {
			prev := releases[n-1]
			if !newer(prev.num, r.num) || prev.date.Before(r.date) {
				t.Errorf("line %d: %s (%s) is listed below %s (%s); the newest release is first", i+1, r.name, m[5], prev.name, prev.date.Format(time.DateOnly))
			}
		}
		releases = append(releases, r)
	}
	if len(releases) == 0 {
		t.Fatal("CHANGELOG.md names no release")
	}
	deploy, err := os.ReadFile("../../docs/deploying.md")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^V=(v[0-9.]+);`).FindSubmatch(deploy)
	if m == nil {
		t.Fatal("docs/deploying.md: no V=vX.Y.Z; line in the deploy commands")
	}
	if string(m[1]) != releases[0].name {
		t.Errorf("docs/deploying.md deploys %s; the newest release in CHANGELOG.md is %s", m[1], releases[0].name)
	}
}

// newer says whether release number a is above b.
func newer(a, b [3]int) bool {
	for k := range 3 {
		if a[k] != b[k] {
			return a[k] > b[k]
		}
	}
	return false
}
