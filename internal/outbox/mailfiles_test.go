package outbox_test

import (
	"context"
	"crypto/sha256"
	"io"
	"mime"
	"mime/multipart"
	"net/mail"
	"strings"
	"testing"
	"time"

	"github.com/formd/formd/internal/outbox"
	"github.com/formd/formd/internal/poll"
	"github.com/formd/formd/internal/store"
	"github.com/formd/formd/internal/store/storetest"
	"github.com/formd/formd/internal/uploads/links"
)

// The owner's mail lists the entry's files: name, type, size and a
// signed link, in the mail's language, and shows the file field by the
// file's name, never the internal upload reference.
func TestOwnerMailListsFiles(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		lang, field, until string
	}{
		{"en", "Photo", "the download links work until"},
		{"zh", "照片", "下载链接在"},
	} {
		t.Run(tc.lang, func(t *testing.T) {
			t.Parallel()
			srv := startSMTP(t)
			mailer := srv.mailer(t, mail.Address{Address: "fair@example.org"})
			signer := links.New([]byte("0123456789abcdef0123456789abcdef"), "https://forms.example.org", 15*time.Minute, time.Now)
			clk := storetest.NewClock(time.Date(2027, 3, 1, 9, 0, 10, 0, time.UTC))
			var f *fixture
			f = newFixture(t, `
id: exam
fields:
  - {name: name, type: text}
  - {name: photo, type: file, label: {en: Photo, zh: 照片}}
notify:
  email: {to: [owner@example.org], lang: `+tc.lang+`}
`, mailer, outbox.Options{Now: clk.Now, Files: func(ctx context.Context, id string) (map[string][]links.File, error) {
				return signer.Files(ctx, f.st, id)
			}})
			ctx := context.Background()
			now := time.Now().UTC()
			up := store.Upload{ID: "0123456789abcdef0123456789abcdef", Form: "exam", Field: "photo", Size: 1536 << 10, Name: "我的照片.jpg", CreatedAt: now, ExpiresAt: now.Add(time.Hour)}
			if err := f.st.CreateUpload(ctx, up); err != nil {
				t.Fatal(err)
			}
			if err := f.st.CompleteUpload(ctx, up.ID, sha256.Sum256([]byte("x")), "image/jpeg"); err != nil {
				t.Fatal(err)
			}
			f.submit("exam", `{"name":"Li","photo":"upload:`+up.ID+`","_uploads":["`+up.ID+`"]}`)
			// The owner's mail waits for the end of the minute (a digest
			// under peaks).
			f.d.FanOutOnce(ctx)
			clk.Advance(time.Minute)
			var msgs []*mail.Message
			poll.Until(t, "the owner's mail", 15*time.Second, func() bool {
				f.d.FanOutOnce(ctx)
				f.d.SendOnce(ctx)
				msgs, _ = srv.messages()
				return len(msgs) == 1
			})
			text, html := bodies(t, msgs[0])
			for _, body := range []string{text, html} {
				for _, want := range []string{"我的照片.jpg", "image/jpeg", "1.5 MiB", "https://forms.example.org/v1/files/", tc.field} {
					if !strings.Contains(body, want) {
						t.Errorf("the mail lacks %q:\n%s", want, body)
					}
				}
				if strings.Contains(body, "upload:") {
					t.Errorf("the mail shows the internal upload reference:\n%s", body)
				}
			}
			if !strings.Contains(strings.ToLower(text), strings.ToLower(tc.until)) {
				t.Errorf("the mail does not say until when the links work:\n%s", text)
			}
		})
	}
}

// bodies are a message's text and HTML parts, decoded.
func bodies(t *testing.T, m *mail.Message) (text, html string) {
	t.Helper()
	_, params, err := mime.ParseMediaType(m.Header.Get("Content-Type"))
	if err != nil {
		t.Fatal(err)
	}
	mr := multipart.NewReader(m.Body, params["boundary"])
	for {
		p, err := mr.NextPart()
		if err == io.EOF {
			return text, html
		}
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(p)
		switch {
		case strings.HasPrefix(p.Header.Get("Content-Type"), "text/plain"):
			text = string(b)
		case strings.HasPrefix(p.Header.Get("Content-Type"), "text/html"):
			html = string(b)
		}
	}
}
