package langpref

import "testing"

func TestAccept(t *testing.T) {
	t.Parallel()
	tests := []struct {
		header string
		want   Base
	}{
		{"", None},
		{"zh-CN", Chinese},
		{"zh-Hans-CN, en;q=0.5", Chinese},
		{"en-US,en;q=0.9,zh-CN;q=0.8", English},
		{"fr, zh;q=0.2", Chinese},
		{"zh;q=0, en;q=0.1", English},
		{"zh-TW", Chinese},
		{"de, fr", None},
		{"en;q=0.3, zh;q=0.7", Chinese},
	}
	for _, tc := range tests {
		if got := Accept(tc.header); got != tc.want {
			t.Errorf("Accept(%q) = %q, want %q", tc.header, got, tc.want)
		}
	}
}

func TestOf(t *testing.T) {
	t.Parallel()
	for tag, want := range map[string]Base{
		"zh": Chinese, "zh-CN": Chinese, "zh_TW": Chinese, "zh-Hans": Chinese, "ZH-cn": Chinese,
		"en": English, "en-GB": English, "": None, "fr": None, "x y": None,
	} {
		if got := Of(tag); got != want {
			t.Errorf("Of(%q) = %q, want %q", tag, got, want)
		}
	}
}
