package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/formd/formd/internal/accounts"
)

// The single sign-on settings come from flags, FORMD_* and the file like
// every other, and are checked together with errors naming the setting.
func TestOIDCSettings(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "formd.yaml")
	os.WriteFile(file, []byte("oidc-roles: |\n  formd-admins=owner:*\n  fair-team=editor:fair,expo\n"), 0o600)
	c, err := load(t, []string{"--config", file, "--oidc-issuer", "https://id.example.org/realms/staff", "--oidc-name", "Staff ID"},
		map[string]string{"FORMD_OIDC_CLIENT_ID": "formd", "FORMD_OIDC_CLIENT_SECRET": "s3cret", "FORMD_PASSWORD_SIGN_IN": "off",
			"FORMD_BREAK_GLASS_EMAIL": "Root@Example.org"})
	if err != nil {
		t.Fatal(err)
	}
	o := c.OIDC
	if o.Issuer != "https://id.example.org/realms/staff" || o.ClientID != "formd" || o.ClientSecret != "s3cret" || o.Name != "Staff ID" ||
		o.RoleClaim != "groups" || len(o.Rules) != 2 || o.Rules[1].Role != accounts.Editor || strings.Join(o.Rules[1].Sites, ",") != "fair,expo" ||
		o.Rules[0].Sites[0] != "*" || c.PasswordSignIn || c.BreakGlass != "root@example.org" {
		t.Fatalf("settings %+v password=%v break-glass=%q", o, c.PasswordSignIn, c.BreakGlass)
	}
	if d := Default(); !d.PasswordSignIn || d.OIDC.Enabled() {
		t.Fatalf("defaults: passwords %v, oidc %+v", d.PasswordSignIn, d.OIDC)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--oidc-issuer", "http://id.example.org"}, "oidc-issuer"},
		{[]string{"--oidc-issuer", "https://id.example.org"}, "needs oidc-client-id"},
		{[]string{"--oidc-issuer", "https://id.example.org", "--oidc-client-id", "formd"}, "needs oidc-roles"},
		{[]string{"--oidc-client-id", "formd"}, "oidc-client-id needs oidc-issuer"},
		{[]string{"--oidc-roles", "admins=boss:*"}, "use owner, editor or viewer"},
		{[]string{"--oidc-roles", "admins=owner"}, "VALUE=ROLE:SITES"},
		{[]string{"--oidc-roles", "admins=owner:"}, "names no site"},
		{[]string{"--password-sign-in", "off"}, "nobody could sign in"},
		{[]string{"--password-sign-in", "maybe"}, "on or off"},
	} {
		if _, err := load(t, tc.args, nil); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: got %v, want an error with %q", tc.args, err, tc.want)
		}
	}
}
