package form

import (
	"slices"
	"strings"
	"testing"
)

// Pages are steps of field indexes; a hidden field is validated as text
// and on no page; prefill is a flag the hosted page reads.
func TestPagesHiddenPrefill(t *testing.T) {
	t.Parallel()
	f := mustForm(t, `
id: app
fields:
  - {name: name, type: text, required: true}
  - {name: class, type: text, prefill: true, max_length: 10}
  - {name: essay, type: textarea}
  - {name: utm_source, type: hidden, max_length: 20}
pages:
  - {title: {en: You, zh: 个人信息}, fields: [name]}
  - {title: School, fields: [class]}
  - {title: Essay, fields: [essay]}
`)
	if got := f.Steps(); len(got) != 3 || !slices.Equal(got[0], []int{0}) || !slices.Equal(got[1], []int{1}) || !slices.Equal(got[2], []int{2}) {
		t.Fatalf("steps %v", got)
	}
	if fd, _ := f.Field("class"); !fd.Prefill {
		t.Fatal("class has prefill")
	}
	acc, err := f.Validate(map[string]any{"name": "Ann", "class": "3B", "utm_source": "  wechat \u200b"}, testHasher)
	if err != nil {
		t.Fatal(err)
	}
	if string(acc.Data) != `{"name":"Ann","class":"3B","utm_source":"wechat"}` {
		t.Fatalf("data %s", acc.Data)
	}
	_, err = f.Validate(map[string]any{"name": "Ann", "utm_source": strings.Repeat("x", 21)}, testHasher)
	if err == nil || !strings.Contains(err.Error(), "utm_source: too-long") {
		t.Fatalf("a hidden value is validated like any other: %v", err)
	}
}
