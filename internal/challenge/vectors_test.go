package challenge

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// vectorFile is made by testdata/altcha/gen.mjs with altcha-lib (pinned in
// its package-lock.json) and committed, so this test needs no Node.
type vectorFile struct {
	Generator string `json:"generator"`
	Vectors   []struct {
		Name      string `json:"name"`
		HMACKey   string `json:"hmacKey"`
		Salt      string `json:"salt"`
		Number    int64  `json:"number"`
		MaxNumber int64  `json:"maxnumber"`
		Challenge string `json:"challenge"`
		Signature string `json:"signature"`
		Payload   string `json:"payload"`
		Form      string `json:"form"`
		Expires   int64  `json:"expires"`
	} `json:"vectors"`
}

// formd computes altcha-lib's challenge and signature for each fixed salt
// and number, and accepts each of altcha-lib's solutions.
func TestAltchaLibVectors(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("testdata", "altcha", "vectors.json"))
	if err != nil {
		t.Fatal(err)
	}
	var vf vectorFile
	if err := json.Unmarshal(raw, &vf); err != nil {
		t.Fatal(err)
	}
	if len(vf.Vectors) < 8 {
		t.Fatalf("want at least 8 vectors, got %d", len(vf.Vectors))
	}
	solved := 0
	for _, v := range vf.Vectors {
		t.Run(v.Name, func(t *testing.T) {
			s := NewSignerKey(v.HMACKey)
			got := s.issue(v.Salt, v.Number, v.MaxNumber)
			if got.Challenge != v.Challenge || got.Signature != v.Signature {
				t.Fatalf("issue(%q, %d) = %s / %s; altcha-lib made %s / %s", v.Salt, v.Number, got.Challenge, got.Signature, v.Challenge, v.Signature)
			}
			if v.Payload == "" {
				return
			}
			solved++
			before := time.Unix(v.Expires, 0).Add(-time.Minute)
			sol, err := s.Verify(v.Payload, v.Form, before)
			if err != nil || sol.Signature != v.Signature || sol.Expires.Unix() != v.Expires {
				t.Fatalf("Verify(altcha-lib's solution) = %+v, %v", sol, err)
			}
			if _, err := s.Verify(v.Payload, v.Form, time.Unix(v.Expires, 0)); err != ErrExpired {
				t.Fatalf("at its expiry: %v, want ErrExpired", err)
			}
			if _, err := s.Verify(v.Payload, "other-form", before); err != ErrWrongForm {
				t.Fatalf("for another form: %v, want ErrWrongForm", err)
			}
			if _, err := NewSignerKey("another key").Verify(v.Payload, v.Form, before); err != ErrForged {
				t.Fatalf("with another key: %v, want ErrForged", err)
			}
		})
	}
	if solved < 4 {
		t.Fatalf("want at least 4 solved vectors, got %d", solved)
	}
}

// altcha-lib verifies formd's challenges solved by formd's solver. It
// runs testdata/altcha/verify.mjs, so it needs Node and `npm ci` there
// (.ci/run does it); without them it skips, saying so.
func TestAltchaLibVerifiesFormd(t *testing.T) {
	dir := filepath.Join("testdata", "altcha")
	node, err := exec.LookPath("node")
	if _, serr := os.Stat(filepath.Join(dir, "node_modules", "altcha-lib")); err != nil || serr != nil {
		if os.Getenv("FORMD_REQUIRE_SERVICES") != "" {
			t.Fatalf("node or %s/node_modules missing (run npm ci there)", dir)
		}
		t.Skipf("needs node and `npm ci` in %s", dir)
	}
	const key = "formd-key-for-altcha-lib"
	s := NewSignerKey(key)
	now := time.Now()
	type line struct {
		HMACKey string `json:"hmacKey"`
		Payload string `json:"payload"`
	}
	var in bytes.Buffer
	want := []bool{}
	add := func(p Payload, ok bool) {
		b, _ := json.Marshal(line{key, Encode(p)})
		in.Write(append(b, '\n'))
		want = append(want, ok)
	}
	for i := range 5 {
		c := s.Issue("spring-fair", 5000, now.Add(DefaultTTL))
		p, ok := Solve(c)
		if !ok {
			t.Fatalf("challenge %d not solved", i)
		}
		add(p, true)
		wrong := p
		wrong.Number++
		add(wrong, false)
	}
	expired := s.Issue("spring-fair", 100, now.Add(-time.Minute))
	p, _ := Solve(expired)
	add(p, false)

	cmd := exec.Command(node, "verify.mjs")
	cmd.Dir = dir
	cmd.Stdin = &in
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("verify.mjs: %v", err)
	}
	sc := bufio.NewScanner(bytes.NewReader(out))
	i := 0
	for sc.Scan() {
		var r struct {
			OK     bool              `json:"ok"`
			Params map[string]string `json:"params"`
		}
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatal(err)
		}
		if i >= len(want) {
			t.Fatalf("more answers than questions: %s", out)
		}
		if r.OK != want[i] {
			t.Errorf("solution %d: altcha-lib says %v, want %v", i, r.OK, want[i])
		}
		if r.Params["form"] != "spring-fair" || r.Params["expires"] == "" {
			t.Errorf("solution %d: altcha-lib reads the params as %v", i, r.Params)
		}
		i++
	}
	if i != len(want) {
		t.Fatalf("altcha-lib answered %d of %d: %s", i, len(want), strings.TrimSpace(string(out)))
	}
}
