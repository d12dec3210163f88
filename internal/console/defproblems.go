package console

import (
	"regexp"
)

// zhKinds are the kinds of value the form compiler names (lenient.go's
// kindWords), in Chinese.
var zhKinds = map[string]string{
	"a whole number":                     "整数",
	"a whole number, 0 or more":          "不小于 0 的整数",
	"a number":                           "数字",
	"true or false":                      "true（是）或 false（否）",
	"text":                               "文字",
	"a list, such as [a, b]":             "列表，如 [a, b]",
	"a list of lists, such as [[phone]]": "列表的列表，如 [[phone]]",
	"a map of settings":                  "一组设置",
}

var (
	mustBeRe = regexp.MustCompile(`^(\S+) must be (.+), got (.+)$`)
	timeRe   = regexp.MustCompile(`^(\S+) must be an RFC 3339 time with its offset, such as (\S+)$`)
)

// definitionProblem words a problem of a form definition for the page's
// language (issue 34: the Chinese editor said `required must be true or
// false, got "yes please"`). The setting's name stays as written in the
// YAML; shapes formd has no words for stay as they are.
func definitionProblem(l lang, msg string) string {
	if l.Tag != chinese.Tag {
		return msg
	}
	if m := mustBeRe.FindStringSubmatch(msg); m != nil {
		if k, ok := zhKinds[m[2]]; ok {
			return m[1] + " 应填：" + k + "；这里写的是 " + m[3]
		}
	}
	if m := timeRe.FindStringSubmatch(msg); m != nil {
		return m[1] + " 应填带时区的时间，如 " + m[2]
	}
	return msg
}
