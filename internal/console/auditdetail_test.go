package console

import (
	"regexp"
	"testing"
)

func TestAuditActorInChinese(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ in, want string }{
		{"command line (formd forget)", "命令行（formd forget）"},
		{"li@example.org (token t1 made by wang@example.org)", "li@example.org（令牌 t1，由 wang@example.org 创建）"},
		{"li@example.org (token t1)", "li@example.org（令牌 t1）"},
		{"setup link", "设置链接"},
		{"anonymous at 203.0.113.7", "匿名（来自 203.0.113.7）"},
		{"li@example.org", "li@example.org"},
	} {
		if got := auditActor(chinese, tc.in); got != tc.want {
			t.Errorf("%q in Chinese: %q, want %q", tc.in, got, tc.want)
		}
		if got := auditActor(english, tc.in); got != tc.in {
			t.Errorf("%q in English: %q", tc.in, got)
		}
	}
}

// Every shape of detail formd writes reads in Chinese on a Chinese page
// (issue 21 item 4), and stays as stored in English.
func TestAuditDetailInChinese(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ in, want string }{
		{`account=li@example.org name="ci"`, `账号：li@example.org，名称："ci"`},
		{"ip=203.0.113.7 until=2027-03-01T10:15:00Z", "IP：203.0.113.7，截至：2027-03-01 10:15:00 UTC"},
		{"expires=2027-03-01T10:15:00Z", "到期：2027-03-01 10:15:00 UTC"},
		{"role=owner sites=* first account", "角色：所有者，站点：*（第一个账号）"},
		{"sessions ended", "已结束该账号的所有登录"},
		{"changed by the account; other sessions ended", "由账号本人修改；其他登录已结束"},
		{"set with a reset link; sessions ended; ip=::1", "通过重置链接设置；已结束该账号的所有登录；IP：::1"},
		{"erased 1 of 2 entries; fair/e1; 1 still being processed", "共 2 条，已删除 1 条；fair/e1；1 条仍在处理中"},
		{"erased 3 entries (1 cancelled, 2 stored), 1 file, 2 pending deliveries, 1 dead letter; the journal cannot delete its copies: they stay until its own limits remove them",
			"已删除：3 条报名（已取消 1，已保存 2），1 个文件，2 个待推送，1 条无法处理的报名；日志无法删除其中的副本：它们会保留到日志自身的期限届满"},
		{"erased nothing", "已删除：无"},
		{"promoted e2,e3", "已从候补转正：e2,e3"},
		{"decided waitlisted", "重新处理为：候补"},
		{"form=fair site=school since=2027-03-01T00:00:00Z job=j1", "表单：fair，站点：school，起始：2027-03-01 00:00:00 UTC，任务：j1"},
		{"event=12 endpoint=https://example.org/hook", "事件：12，接收端：https://example.org/hook"},
		{`{"failed_only":true,"redelivered":3,"since":null,"until":null}`, "仅失败的：是，已重新投递：3，起始：null，截至：null"},
	} {
		if got := auditDetail(chinese, tc.in); got != tc.want {
			t.Errorf("%q in Chinese: %q, want %q", tc.in, got, tc.want)
		}
		if got := auditDetail(english, tc.in); got != tc.in {
			t.Errorf("%q in English: %q", tc.in, got)
		}
		// No English word of formd's own is left.
		if m := regexp.MustCompile(`\b(account|name|ip|until|expires|role|sites|first|sessions|ended|erased|entries|promoted|decided|form|site|since|job|event|endpoint|failed_only|redelivered)\b=?`).FindString(auditDetail(chinese, tc.in)); m != "" {
			t.Errorf("%q in Chinese keeps %q", tc.in, m)
		}
	}
}
