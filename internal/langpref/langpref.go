// Package langpref reads which of formd's two languages a person asked
// for: English or Chinese, from an Accept-Language header or one tag. The
// console, the hosted pages and the e-mails all ask it, so a header means
// the same everywhere.
package langpref

import (
	"golang.org/x/text/language"
)

// Base is a language formd speaks, by its base subtag.
type Base string

// The two languages. None means the input names neither.
const (
	None    Base = ""
	English Base = "en"
	Chinese Base = "zh"
)

var (
	en = language.MustParseBase("en")
	zh = language.MustParseBase("zh")
)

// Of is the language of one tag: Chinese for any zh tag (zh, zh-CN,
// zh_TW, zh-Hans, …; Traditional script too, as Simplified is closer to it
// than English), English for any en tag, None for anything else.
func Of(tag string) Base {
	t, err := language.Parse(tag)
	if err != nil {
		return None
	}
	return baseOf(t)
}

func baseOf(t language.Tag) Base {
	switch b, _ := t.Base(); b {
	case zh:
		return Chinese
	case en:
		return English
	}
	return None
}

// Accept is the language an Accept-Language header prefers most (highest
// q, then the order written), skipping the ones formd does not speak; None
// when it names neither or cannot be read.
func Accept(header string) Base {
	tags, _, err := language.ParseAcceptLanguage(header)
	if err != nil {
		return None
	}
	for _, t := range tags {
		if b := baseOf(t); b != None {
			return b
		}
	}
	return None
}
