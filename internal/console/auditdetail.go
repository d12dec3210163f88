package console

import (
	"encoding/json"
	"maps"
	"regexp"
	"slices"
	"strings"
	"time"
)

// auditDetail words an audit entry's detail for the page's language. The
// details are written by formd itself, in English, from a few shapes:
// key=value pairs (account=, ip=, expires=, form=, …), a JSON object (a
// redelivery's window), and phrases joined by "; " ("sessions ended",
// "erased 1 of 2 entries"). Chinese pages word each shape; anything else
// is shown as stored, which is still true. The stored text is kept on
// hover (the template's title).
func auditDetail(l lang, d string) string {
	if l.Tag != chinese.Tag || d == "" {
		return d
	}
	if strings.HasPrefix(d, "{") {
		var m map[string]any
		if json.Unmarshal([]byte(d), &m) == nil {
			keys := slices.Sorted(maps.Keys(m))
			var parts []string
			for _, k := range keys {
				v, _ := json.Marshal(m[k])
				parts = append(parts, k+"="+strings.Trim(string(v), `"`))
			}
			d = strings.Join(parts, " ")
		}
	}
	segs := strings.Split(d, "; ")
	for i, s := range segs {
		segs[i] = detailSegment(l, s)
	}
	return strings.Join(segs, "；")
}

// detailPhrases are the whole phrases formd writes in details.
var detailPhrases = map[string]string{
	"sessions ended":         "已结束该账号的所有登录",
	"changed by the account": "由账号本人修改",
	"other sessions ended":   "其他登录已结束",
	"set with a reset link":  "通过重置链接设置",
	"the journal cannot delete its copies: they stay until its own limits remove them": "日志无法删除其中的副本：它们会保留到日志自身的期限届满",
}

// detailPatterns are the phrases with a number or a list in them.
var detailPatterns = []struct {
	re *regexp.Regexp
	zh func(l lang, m []string) string
}{
	{regexp.MustCompile(`^erased (\d+) of (\d+) entries$`), func(_ lang, m []string) string { return "共 " + m[2] + " 条，已删除 " + m[1] + " 条" }},
	// What deleting a form erased (store.FormContents.Summary).
	{regexp.MustCompile(`^erased ((?:\d+ [a-z -]+(?: \([^)]*\))?(?:, )?)+|nothing)$`), func(l lang, m []string) string { return "已删除：" + erasedZH(l, m[1]) }},
	{regexp.MustCompile(`^(\d+) still being processed$`), func(_ lang, m []string) string { return m[1] + " 条仍在处理中" }},
	{regexp.MustCompile(`^promoted (.+)$`), func(_ lang, m []string) string { return "已从候补转正：" + m[1] }},
	{regexp.MustCompile(`^decided ([a-z-]+)$`), func(l lang, m []string) string {
		if s, ok := l.T["status."+m[1]]; ok {
			return "重新处理为：" + s
		}
		return "重新处理为：" + m[1]
	}},
}

// erasedUnits word the kinds a form's deletion counts.
var erasedUnits = []struct{ en, zh string }{
	{"entries", "条报名"}, {"entry", "条报名"}, {"files", "个文件"}, {"file", "个文件"},
	{"pending deliveries", "个待推送"}, {"pending delivery", "个待推送"},
	{"dead letters", "条无法处理的报名"}, {"dead letter", "条无法处理的报名"},
	{"drafts", "份草稿"}, {"draft", "份草稿"}, {"check-ins", "次签到"}, {"check-in", "次签到"},
}

var (
	erasedPart     = regexp.MustCompile(`^(\d+) ([a-z -]+?)(?: \(([^)]*)\))?$`)
	erasedByStatus = regexp.MustCompile(`^(\d+) ([a-z-]+)$`)
)

// erasedZH words "1 entry (1 stored), 2 files" as "1 条报名（已保存 1 条），2 个文件";
// a part it does not know stays as written.
func erasedZH(l lang, s string) string {
	if s == "nothing" {
		return "无"
	}
	var out []string
	for _, p := range splitOutside(s) {
		m := erasedPart.FindStringSubmatch(p)
		if m == nil {
			out = append(out, p)
			continue
		}
		w := p
		for _, u := range erasedUnits {
			if u.en == m[2] {
				w = m[1] + " " + u.zh
				break
			}
		}
		if m[3] != "" {
			var by []string
			for _, st := range strings.Split(m[3], ", ") {
				if sm := erasedByStatus.FindStringSubmatch(st); sm != nil {
					if name, ok := l.T["status."+sm[2]]; ok {
						st = name + " " + sm[1]
					}
				}
				by = append(by, st)
			}
			w += "（" + strings.Join(by, "，") + "）"
		}
		out = append(out, w)
	}
	return strings.Join(out, "，")
}

// splitOutside splits s at the ", " outside parentheses.
func splitOutside(s string) []string {
	var out []string
	depth, start := 0, 0
	for i := 0; i < len(s); i++ {
		switch {
		case s[i] == '(':
			depth++
		case s[i] == ')':
			depth--
		case depth == 0 && strings.HasPrefix(s[i:], ", "):
			out = append(out, s[start:i])
			start = i + 2
		}
	}
	return append(out, s[start:])
}

// detailKeys are the keys of key=value pairs, in Chinese.
var detailKeys = map[string]string{
	"account": "账号", "name": "名称", "ip": "IP", "until": "截至", "expires": "到期",
	"job": "任务", "event": "事件", "endpoint": "接收端", "role": "角色", "sites": "站点",
	"form": "表单", "site": "站点", "since": "起始", "failed_only": "仅失败的", "redelivered": "已重新投递",
}

func detailSegment(l lang, s string) string {
	if zh, ok := detailPhrases[s]; ok {
		return zh
	}
	for _, p := range detailPatterns {
		if m := p.re.FindStringSubmatch(s); m != nil {
			return p.zh(l, m)
		}
	}
	first := strings.HasSuffix(s, " first account")
	s = strings.TrimSuffix(s, " first account")
	words := strings.Split(s, " ")
	for i, w := range words {
		k, v, ok := strings.Cut(w, "=")
		zk, known := detailKeys[k]
		if !ok || !known {
			continue
		}
		if k == "role" {
			if r, ok := l.T["role."+v]; ok {
				v = r
			}
		}
		if k == "failed_only" {
			v = map[string]string{"true": "是", "false": "否"}[v]
		}
		// A time as the console writes times, not as ISO 8601 (issue 34).
		if at, err := time.Parse(time.RFC3339, v); err == nil {
			v = at.UTC().Format("2006-01-02 15:04:05") + " UTC"
		}
		words[i] = zk + "：" + v
	}
	s = strings.Join(words, "，")
	if first {
		s += "（第一个账号）"
	}
	return s
}

// actorPatterns word, in Chinese, who an audit entry names as its actor
// (accounts.Principal's String, the setup and reset links, an anonymous
// address).
var actorPatterns = []struct {
	re *regexp.Regexp
	zh string
}{
	{regexp.MustCompile(`^command line \((.*)\)$`), "命令行（$1）"},
	{regexp.MustCompile(`^(.*) \(token (\S+) made by (.*)\)$`), "$1（令牌 $2，由 $3 创建）"},
	{regexp.MustCompile(`^(.*) \(token (\S+)\)$`), "$1（令牌 $2）"},
	{regexp.MustCompile(`^setup link$`), "设置链接"},
	{regexp.MustCompile(`^reset link$`), "重置链接"},
	{regexp.MustCompile(`^anonymous$`), "匿名"},
	{regexp.MustCompile(`^anonymous at (.*)$`), "匿名（来自 $1）"},
}

// auditActor words an audit entry's actor for the page's language.
func auditActor(l lang, a string) string {
	if l.Tag != chinese.Tag {
		return a
	}
	for _, p := range actorPatterns {
		if p.re.MatchString(a) {
			return p.re.ReplaceAllString(a, p.zh)
		}
	}
	return a
}
