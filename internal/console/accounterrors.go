package console

import (
	"errors"
	"fmt"

	"github.com/formd/formd/internal/accounts"
	"github.com/formd/formd/internal/problem"
)

// zhAccountErrors are the account mistakes a person makes on the setup,
// reset and accounts pages, in Chinese (issue 34: the setup page's
// password error was in English).
var zhAccountErrors = []struct {
	err error
	zh  string
}{
	{accounts.ErrPasswordTooShort, fmt.Sprintf("密码至少要 %d 个字符；几个互不相关的词连在一起就是好密码。", accounts.MinPasswordLength)},
	{accounts.ErrPasswordTooLong, "密码太长了，请换一个短一些的。"},
	{accounts.ErrInvalidEmail, "这不是电子邮箱地址，请按 name@example.com 的样子填写。"},
	{accounts.ErrEmailTaken, "已有账号使用这个电子邮箱。"},
	{accounts.ErrInvalidRole, "请选择一个角色。"},
	{accounts.ErrInvalidSites, "站点请填 *（全部站点），或用逗号分隔的站点名称。"},
	{accounts.ErrWrongPassword, "当前密码不对。"},
	{accounts.ErrInvalidTokenName, fmt.Sprintf("请给令牌起一个 1 到 %d 个字符的名字，说明它用在哪里。", accounts.MaxTokenName)},
}

// personError is what a page shows of a person's mistake: the problem's
// detail, in Chinese on a Chinese page when formd has the words.
func personError(l lang, err error) string {
	if l.Tag == chinese.Tag {
		for _, e := range zhAccountErrors {
			if errors.Is(err, e.err) {
				return e.zh
			}
		}
	}
	if d := problem.From(err).Detail; d != "" {
		return d
	}
	return err.Error()
}
