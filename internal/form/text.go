package form

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Text is a human-facing string that may be translated. It is written either
// as a plain string (stored under the empty language tag) or as a map of
// language tag to string, for example {en: Name, zh: 姓名}.
type Text map[string]string

// UnmarshalYAML accepts a plain string or a map of language to string.
func (t *Text) UnmarshalYAML(n *yaml.Node) error {
	switch n.Kind {
	case yaml.ScalarNode:
		var s string
		if err := n.Decode(&s); err != nil {
			return err
		}
		*t = Text{"": s}
		return nil
	case yaml.MappingNode:
		m := map[string]string{}
		if err := n.Decode(&m); err != nil {
			return fmt.Errorf("want a string or a map of language to string: %w", err)
		}
		*t = m
		return nil
	default:
		return fmt.Errorf("line %d: want a string or a map of language to string", n.Line)
	}
}

// MarshalJSON writes a plain string when the text has no translations.
func (t Text) MarshalJSON() ([]byte, error) {
	if len(t) == 1 {
		if s, ok := t[""]; ok {
			return json.Marshal(s)
		}
	}
	return json.Marshal(map[string]string(t))
}

// For picks the best string for a language preference such as "zh-CN":
// the exact tag, then its primary subtag, then the plain string, then
// English, then the first translation in tag order.
func (t Text) For(lang string) string {
	if len(t) == 0 {
		return ""
	}
	lang = strings.ToLower(lang)
	for k, v := range t {
		if strings.ToLower(k) == lang && lang != "" {
			return v
		}
	}
	if i := strings.IndexAny(lang, "-_"); i > 0 {
		if v, ok := t[lang[:i]]; ok {
			return v
		}
	}
	if v, ok := t[""]; ok {
		return v
	}
	if v, ok := t["en"]; ok {
		return v
	}
	keys := slices.Sorted(maps.Keys(t))
	return t[keys[0]]
}
