package console

import (
	"fmt"
	"strings"
	"testing"

	"github.com/formd/formd/internal/accounts"
)

// A person's account mistakes read in Chinese on a Chinese page (issue
// 34: the setup page's password error was English), wrapped or not, and
// as the problem says in English.
func TestPersonErrorInChinese(t *testing.T) {
	t.Parallel()
	wrapped := fmt.Errorf("setup: %w", accounts.ErrPasswordTooShort)
	if got := personError(chinese, wrapped); !strings.Contains(got, "密码至少要") {
		t.Errorf("zh: %q", got)
	}
	if got := personError(english, wrapped); !strings.Contains(got, "the password must be at least") {
		t.Errorf("en: %q", got)
	}
	for _, e := range zhAccountErrors {
		if got := personError(chinese, e.err); got != e.zh || strings.ContainsAny(got, "abcdefghijklmnopqrstuvwxyz") && e.err != accounts.ErrInvalidEmail {
			t.Errorf("%v: %q", e.err, got)
		}
	}
}
