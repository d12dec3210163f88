package console

// region is a choice of the forget page's region of a national number:
// its code (what erasure.Person takes) and its name in the page's
// language (issue 34: the page asked for a code such as CN).
type region struct{ Code, Name string }

// regionNames are the regions offered, in order: the one with no region
// first (a number written with + and its country code), then those an
// organizer of formd's users most likely meets.
var regionNames = []struct{ code, en, zh string }{
	{"", "None: the number has + and its country code", "无：号码带 + 和国家代码"},
	{"CN", "Mainland China", "中国大陆"},
	{"HK", "Hong Kong", "中国香港"},
	{"MO", "Macao", "中国澳门"},
	{"TW", "Taiwan", "中国台湾"},
	{"SG", "Singapore", "新加坡"},
	{"MY", "Malaysia", "马来西亚"},
	{"JP", "Japan", "日本"},
	{"KR", "South Korea", "韩国"},
	{"US", "United States", "美国"},
	{"CA", "Canada", "加拿大"},
	{"GB", "United Kingdom", "英国"},
	{"AU", "Australia", "澳大利亚"},
	{"DE", "Germany", "德国"},
	{"FR", "France", "法国"},
}

// regions are the choices in the page's language.
func regions(l lang) []region {
	out := make([]region, 0, len(regionNames))
	for _, r := range regionNames {
		name := r.en
		if l.Tag == chinese.Tag {
			name = r.zh
		}
		out = append(out, region{Code: r.code, Name: name})
	}
	return out
}
