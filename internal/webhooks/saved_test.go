package webhooks_test

import (
	"context"
	"errors"
	"net/netip"
	"strings"
	"testing"

	"github.com/formd/formd/internal/webhooks"
)

// TestSavedURLResolvingToLoopback is issue 30's loose end: a host name
// that resolved to loopback was taken when the webhook was saved and
// refused only when sent. It is refused at save (the send-time check
// stays); a name that resolves to a public address, or cannot be looked
// up now, is taken; the allow-list still allows.
func TestSavedURLResolvingToLoopback(t *testing.T) {
	t.Parallel()
	hosts := map[string][]netip.Addr{
		"crm.example.test":    {netip.MustParseAddr("93.184.215.5")},
		"inside.example.test": {netip.MustParseAddr("93.184.215.6"), netip.MustParseAddr("127.0.0.1")},
		"v6.example.test":     {netip.MustParseAddr("::1")},
		"mapped.example.test": {netip.MustParseAddr("::ffff:10.0.0.1")},
	}
	resolve := func(_ context.Context, host string) ([]netip.Addr, error) {
		if a, ok := hosts[host]; ok {
			return a, nil
		}
		return nil, errors.New("no such host")
	}
	g := webhooks.NewGuard(nil)
	for raw, refused := range map[string]bool{
		"https://crm.example.test/hook":    false,
		"https://inside.example.test/hook": true,
		"https://v6.example.test/hook":     true,
		"https://mapped.example.test/hook": true,
		"https://unknown.example.test/h":   false,
		"https://93.184.215.9/hook":        false,
	} {
		err := g.CheckSavedURL(raw, resolve)
		if refused != (err != nil) {
			t.Errorf("%s: %v, want refused %v", raw, err, refused)
		}
		if err != nil && strings.Contains(err.Error(), "/hook") {
			t.Errorf("the error repeats the url: %v", err)
		}
	}
	allowed := webhooks.NewGuard([]netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")})
	if err := allowed.CheckSavedURL("https://inside.example.test/hook", resolve); err != nil {
		t.Fatalf("with 127.0.0.0/8 allowed: %v", err)
	}
}
