package webhooks_test

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/formd/formd/internal/webhooks"
)

// specSecret is the secret of the Standard Webhooks test vector.
const specSecret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"

func secretOf(n int) string {
	return "whsec_" + base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{0xA5}, n))
}

func mustSecret(t testing.TB, s string) webhooks.Secret {
	t.Helper()
	sec, err := webhooks.ParseSecret(s)
	if err != nil {
		t.Fatal(err)
	}
	return sec
}

func TestParseSecret(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, in string
		want     string // "" for valid, else a part of the message
	}{
		{"spec example, 24 bytes", specSecret, ""},
		{"32 bytes, padded", secretOf(32), ""},
		{"64 bytes", secretOf(64), ""},
		{"empty", "", "it is empty"},
		{"no prefix", strings.TrimPrefix(specSecret, "whsec_"), `does not start with "whsec_"`},
		{"prefix in capitals", "WHSEC_" + strings.TrimPrefix(specSecret, "whsec_"), `does not start with "whsec_"`},
		{"trailing line break", specSecret + "\n", "spaces or a line break"},
		{"leading space", " " + specSecret, "does not start"},
		{"16 bytes", secretOf(16), "decodes to 16 bytes"},
		{"65 bytes", secretOf(65), "decodes to 65 bytes"},
		{"URL-safe alphabet", "whsec_" + base64.URLEncoding.EncodeToString(bytes.Repeat([]byte{0xFB, 0xFF}, 16)), "not standard base64 at character"},
		{"padding missing", strings.TrimRight(secretOf(32), "="), "not standard base64"},
		{"not base64", "whsec_this is not base64 at all!", "not standard base64"},
		{"only the prefix", "whsec_", "decodes to 0 bytes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s, err := webhooks.ParseSecret(tc.in)
			if tc.want == "" {
				if err != nil || s.IsZero() {
					t.Fatalf("ParseSecret: %v", err)
				}
				return
			}
			if !errors.Is(err, webhooks.ErrInvalidSecret) {
				t.Fatalf("err = %v, want ErrInvalidSecret", err)
			}
			msg := err.Error()
			if !strings.Contains(msg, tc.want) {
				t.Errorf("message %q does not say %q", msg, tc.want)
			}
			if !strings.Contains(msg, "24 to 64 random bytes") {
				t.Errorf("message %q does not say what a valid secret looks like", msg)
			}
			if body := strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(tc.in), "whsec_")); len(body) >= 6 && strings.Contains(msg, body) {
				t.Errorf("message %q repeats the secret", msg)
			}
		})
	}
}

func TestNewSecret(t *testing.T) {
	t.Parallel()
	a, b := webhooks.NewSecret(), webhooks.NewSecret()
	if a == b {
		t.Fatal("two new secrets are equal")
	}
	for _, s := range []string{a, b} {
		if _, err := webhooks.ParseSecret(s); err != nil {
			t.Errorf("NewSecret made %q, which does not parse: %v", s, err)
		}
		if key, _ := base64.StdEncoding.DecodeString(strings.TrimPrefix(s, "whsec_")); len(key) != 32 {
			t.Errorf("NewSecret made %d bytes, want 32", len(key))
		}
	}
}

// A Secret printed or logged by mistake shows nothing of its key.
func TestSecretIsRedacted(t *testing.T) {
	t.Parallel()
	s := mustSecret(t, specSecret)
	key, _ := base64.StdEncoding.DecodeString(strings.TrimPrefix(specSecret, "whsec_"))
	leaks := []string{strings.TrimPrefix(specSecret, "whsec_"), hex.EncodeToString(key), fmt.Sprint(key), string(key)}

	var logged bytes.Buffer
	slog.New(slog.NewJSONHandler(&logged, nil)).Info("endpoint", "secret", s, "secrets", []webhooks.Secret{s})
	outputs := []string{logged.String()}
	for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%q", "%x", "%X", "%d"} {
		outputs = append(outputs, fmt.Sprintf(verb, s), fmt.Sprintf(verb, struct{ S webhooks.Secret }{s}), fmt.Sprintf(verb, []webhooks.Secret{s}))
	}
	for _, out := range outputs {
		for _, leak := range leaks {
			if strings.Contains(out, leak) {
				t.Errorf("%q shows the key", out)
			}
		}
		if !strings.Contains(out, "redacted") {
			t.Errorf("%q does not say the secret is redacted", out)
		}
	}
}
