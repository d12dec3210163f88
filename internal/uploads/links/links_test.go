package links

import (
	"net/url"
	"strings"
	"testing"
	"time"
)

func TestContentDisposition(t *testing.T) {
	t.Parallel()
	for name, want := range map[string]string{
		"photo.jpg":             `attachment; filename="photo.jpg"; filename*=UTF-8''photo.jpg`,
		"我的照片.png":              `attachment; filename="____.png"; filename*=UTF-8''%E6%88%91%E7%9A%84%E7%85%A7%E7%89%87.png`,
		"a\"b;c\r\n.html":       `attachment; filename="a_b_c__.html"; filename*=UTF-8''a%22b%3Bc%0D%0A.html`,
		"":                      `attachment; filename="file"; filename*=UTF-8''file`,
		"50% off report v2.pdf": `attachment; filename="50_ off report v2.pdf"; filename*=UTF-8''50%25%20off%20report%20v2.pdf`,
	} {
		if got := ContentDisposition(name); got != want {
			t.Errorf("ContentDisposition(%q) =\n %s\nwant\n %s", name, got, want)
		}
	}
}

func TestLinksExpireAndBindEntryAndFile(t *testing.T) {
	t.Parallel()
	now := time.Date(2027, 3, 1, 9, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	l := New([]byte("formd test secret, 32 bytes long"), "https://forms.example.org/", 15*time.Minute, clock)
	link := l.URL("entry-1", "0123456789abcdef0123456789abcdef")
	if !strings.HasPrefix(link, "https://forms.example.org/v1/files/entry-1/0123456789abcdef0123456789abcdef?exp=") {
		t.Fatalf("link %s", link)
	}
	u, _ := url.Parse(link)
	exp, sig := u.Query().Get("exp"), u.Query().Get("sig")
	if err := l.Check("entry-1", "0123456789abcdef0123456789abcdef", exp, sig); err != nil {
		t.Fatalf("a fresh link: %v", err)
	}
	if err := l.Check("entry-2", "0123456789abcdef0123456789abcdef", exp, sig); err == nil {
		t.Fatal("the link opens another entry's file")
	}
	if err := l.Check("entry-1", "fedcba9876543210fedcba9876543210", exp, sig); err == nil {
		t.Fatal("the link opens another file")
	}
	other := New([]byte("another installation's secret!!!"), "", 15*time.Minute, clock)
	if err := other.Check("entry-1", "0123456789abcdef0123456789abcdef", exp, sig); err == nil {
		t.Fatal("another installation's key accepts the link")
	}
	now = now.Add(15 * time.Minute)
	if err := l.Check("entry-1", "0123456789abcdef0123456789abcdef", exp, sig); err == nil {
		t.Fatal("the link works after its TTL")
	}
}

// With makes links of another base and TTL that the server's own signer
// accepts until then (an export for people, issue 34).
func TestLinksWithBaseAndTTL(t *testing.T) {
	t.Parallel()
	now := time.Date(2027, 3, 1, 9, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	l := New([]byte("formd test secret, 32 bytes long"), "", 15*time.Minute, clock)
	w := l.With("https://forms.example.org/", 7*24*time.Hour)
	link := w.URL("entry-1", "0123456789abcdef0123456789abcdef")
	if !strings.HasPrefix(link, "https://forms.example.org/v1/files/entry-1/") {
		t.Fatalf("link %s: want it absolute", link)
	}
	if rel := l.URL("entry-1", "0123456789abcdef0123456789abcdef"); !strings.HasPrefix(rel, "/v1/files/") {
		t.Fatalf("the server's own signer changed: %s", rel)
	}
	u, _ := url.Parse(link)
	exp, sig := u.Query().Get("exp"), u.Query().Get("sig")
	now = now.Add(6 * 24 * time.Hour)
	if err := l.Check("entry-1", "0123456789abcdef0123456789abcdef", exp, sig); err != nil {
		t.Fatalf("after six days of seven: %v", err)
	}
	now = now.Add(24 * time.Hour)
	if err := l.Check("entry-1", "0123456789abcdef0123456789abcdef", exp, sig); err == nil {
		t.Fatal("the link works after its seven days")
	}
	if same := l.With("", 0); same.URL("e", "u") != l.URL("e", "u") {
		t.Error("With of nothing changed the links")
	}
}

// TestFileNamesLoseBidiControls is issue 30's loose end: a file named
// "evil\u202egpj.exe" showed as "evilexe.jpg". The controls go from the
// name shown and sent (and from names kept before); the uploads service
// tests the name kept.
func TestFileNamesLoseBidiControls(t *testing.T) {
	t.Parallel()
	for _, in := range []string{"evil\u202egpj.exe", "evil\u2066gpj.exe\u2069", "\ufeffevilgpj.exe\u200b"} {
		if got := CleanName(in); got != "evilgpj.exe" {
			t.Errorf("CleanName(%q) = %q", in, got)
		}
		if got := ContentDisposition(in); strings.Contains(got, "%E2%80%AE") || !strings.Contains(got, `filename="evilgpj.exe"`) {
			t.Errorf("Content-Disposition of %q: %s", in, got)
		}
	}
}
