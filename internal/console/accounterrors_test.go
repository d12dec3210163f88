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

// The definition editor's problems read in Chinese on a Chinese page
// (issue 34), the setting's name kept as the YAML has it.
func TestDefinitionProblemInChinese(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ in, want string }{
		{`required must be true or false, got "yes please"`, `required 应填：true（是）或 false（否）；这里写的是 "yes please"`},
		{`capacity must be a whole number, got "two"`, `capacity 应填：整数；这里写的是 "two"`},
		{"closes_at must be an RFC 3339 time with its offset, such as 2027-03-01T09:00:00+08:00", "closes_at 应填带时区的时间，如 2027-03-01T09:00:00+08:00"},
		{`type "txt" is not valid`, `type "txt" is not valid`},
	} {
		if got := definitionProblem(chinese, tc.in); got != tc.want {
			t.Errorf("%q: %q, want %q", tc.in, got, tc.want)
		}
		if got := definitionProblem(english, tc.in); got != tc.in {
			t.Errorf("%q in English: %q", tc.in, got)
		}
	}
}
