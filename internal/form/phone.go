package form

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/nyaruka/phonenumbers"
)

// NormalizePhone turns a phone number as a person writes it ("+86 138 0013
// 8000", "13800138000" with region CN) into E.164, with an extension kept
// as ";ext=N" (RFC 3966). Without a region the number must start with +
// and a country code.
func NormalizePhone(s, region string) (string, error) {
	p, fe := normalizePhone(fold(s), strings.ToUpper(region))
	if fe != nil {
		return "", fmt.Errorf("%s", fe.Message)
	}
	return p, nil
}

func normalizePhone(s, region string) (string, *FieldError) {
	if len(s) > 64 {
		return "", fieldErr("invalid-phone", "is not a phone number")
	}
	if cc, nn, ok := parseCommon(s, region); ok && validNumber(cc, nn) {
		return "+" + strconv.Itoa(cc) + strconv.FormatUint(nn, 10), nil
	}
	reg := region
	if reg == "" {
		reg = "ZZ"
	}
	num, err := phonenumbers.Parse(s, reg)
	if err != nil {
		if region == "" && !strings.HasPrefix(strings.TrimSpace(s), "+") {
			return "", fieldErr("invalid-phone", "must start with + and the country code")
		}
		return "", fieldErr("invalid-phone", "is not a phone number")
	}
	if !phonenumbers.IsValidNumber(num) {
		return "", fieldErr("invalid-phone", "is not a valid phone number")
	}
	e164 := phonenumbers.Format(num, phonenumbers.E164)
	if ext := num.GetExtension(); ext != "" {
		// E.164 has no extension; RFC 3966's ";ext=" keeps it, so a
		// switchboard's extensions stay apart and nothing typed is lost.
		e164 += ";ext=" + ext
	}
	return e164, nil
}

// parseCommon reads the two most common ways people write a number — with
// its country code ("+86 139 1234 5678", "+1 (415) 555-0100") or as a
// plain national number for the field's region ("139 1234 5678" in CN) —
// without libphonenumber's general parser, whose regular expressions cost
// about three quarters of a submission's validation. It only splits the
// digits into country code and national number; libphonenumber still
// decides validity. Anything the general parser might read differently
// returns false and takes that parser: letters, extensions, a leading zero
// (Italy's numbers, a "(0)" trunk prefix), digits that could be an
// international call prefix, a national prefix or a carrier code the
// country's metadata describes. So does a number the fast path finds
// invalid. FuzzPhoneFastPath checks that whatever the fast path accepts,
// the general parser accepts with the same E.164.
func parseCommon(s, region string) (cc int, nn uint64, ok bool) {
	if len(s) > 64 {
		return 0, 0, false
	}
	var buf [20]byte
	n := 0
	plus := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= '0' && c <= '9':
			if n == len(buf) {
				return 0, 0, false
			}
			buf[n] = c
			n++
		case c == '+' && n == 0 && !plus:
			plus = true
		case c == ' ' || c == '-' || c == '.' || c == '(' || c == ')' || c == '/':
		default:
			return 0, 0, false
		}
	}
	digits := buf[:n]
	if n < 5 || n > 17 || digits[0] == '0' {
		return 0, 0, false
	}
	meta := phoneMeta()
	var national []byte
	if plus {
		for ccLen := 1; ccLen <= 3 && cc == 0; ccLen++ {
			c, _ := strconv.Atoi(string(digits[:ccLen]))
			if len(phonenumbers.GetRegionCodesForCountryCode(c)) > 0 {
				cc, national = c, digits[ccLen:]
			}
		}
		if cc == 0 {
			return 0, 0, false
		}
	} else {
		r, known := meta.byRegion[region]
		if !known || (r.idd != nil && r.idd.Match(digits)) {
			return 0, 0, false
		}
		cc, national = r.cc, digits
	}
	if len(national) < 2 || national[0] == '0' {
		return 0, 0, false
	}
	if re := meta.prefix[cc]; re != nil && re.Match(national) {
		return 0, 0, false
	}
	nn, err := strconv.ParseUint(string(national), 10, 64)
	if err != nil {
		return 0, 0, false
	}
	return cc, nn, true
}

// validNumber is phonenumbers.IsValidNumber for a number split by
// parseCommon, with the library's own patterns compiled once: the library
// builds each pattern's string and matches it twice per number type on
// every call, which made validity half of a submission's validation and a
// third of its allocations. A calling code shared by several regions
// (NANPA's +1, +7, +44…) needs the library's choice of region, so it
// asks the library. FuzzPhoneFastPath checks both agree.
func validNumber(cc int, nn uint64) bool {
	v, ok := phoneMeta().validity[cc]
	if !ok {
		c32 := int32(cc)
		return phonenumbers.IsValidNumber(&phonenumbers.PhoneNumber{CountryCode: &c32, NationalNumber: &nn})
	}
	var buf [20]byte
	national := strconv.AppendUint(buf[:0], nn, 10)
	if !v.general.matches(national) {
		return false
	}
	for _, d := range v.types {
		if d.matches(national) {
			return true
		}
	}
	return false
}

// numberDesc is one of a region's number patterns with its possible
// lengths (none: any length the general pattern allows).
type numberDesc struct {
	re      *regexp.Regexp
	lengths []int32
}

func (d numberDesc) matches(national []byte) bool {
	if len(d.lengths) > 0 && !slices.Contains(d.lengths, int32(len(national))) {
		return false
	}
	return d.re.Match(national)
}

// regionValidity is what makes a number of a region valid: the general
// pattern, and at least one of the number types (fixed line, mobile, toll
// free, …), as libphonenumber's getNumberTypeHelper decides.
type regionValidity struct {
	general numberDesc
	types   []numberDesc
}

func compileValidity(md *phonenumbers.PhoneMetadata) (regionValidity, bool) {
	desc := func(d *phonenumbers.PhoneNumberDesc) (numberDesc, bool) {
		if d == nil || d.GetNationalNumberPattern() == "" {
			return numberDesc{}, false
		}
		re, err := regexp.Compile(`^(?:` + d.GetNationalNumberPattern() + `)$`)
		if err != nil {
			return numberDesc{}, false
		}
		return numberDesc{re: re, lengths: d.GetPossibleLength()}, true
	}
	general, ok := desc(md.GetGeneralDesc())
	if !ok {
		return regionValidity{}, false
	}
	v := regionValidity{general: general}
	for _, d := range []*phonenumbers.PhoneNumberDesc{md.GetPremiumRate(), md.GetTollFree(), md.GetSharedCost(), md.GetVoip(),
		md.GetPersonalNumber(), md.GetPager(), md.GetUan(), md.GetVoicemail(), md.GetFixedLine(), md.GetMobile()} {
		if nd, ok := desc(d); ok {
			v.types = append(v.types, nd)
		}
	}
	return v, true
}

// phoneMetadata is what the fast path needs from libphonenumber's metadata:
// per calling code, the national prefix (or carrier code) pattern the
// parser strips; per region, its calling code and international call
// prefix.
type phoneMetadata struct {
	prefix   map[int]*regexp.Regexp
	byRegion map[string]regionPhone
	validity map[int]regionValidity // calling codes of a single region
}

type regionPhone struct {
	cc  int
	idd *regexp.Regexp
}

// phoneMeta is read once from the library's own metadata. Without it the
// fast path takes nothing.
var phoneMeta = sync.OnceValue(func() phoneMetadata {
	m := phoneMetadata{prefix: map[int]*regexp.Regexp{}, byRegion: map[string]regionPhone{}, validity: map[int]regionValidity{}}
	coll, err := phonenumbers.MetadataCollection()
	if err != nil {
		return m
	}
	for _, md := range coll.GetMetadata() {
		cc := int(md.GetCountryCode())
		if regions := phonenumbers.GetRegionCodesForCountryCode(cc); len(regions) == 1 && regions[0] == md.GetId() {
			if v, ok := compileValidity(md); ok {
				m.validity[cc] = v
			}
		}
		if phonenumbers.GetRegionCodeForCountryCode(cc) == md.GetId() {
			if p := md.GetNationalPrefixForParsing(); p != "" {
				m.prefix[cc] = regexp.MustCompile(`^(?:` + p + `)`)
			} else if p := md.GetNationalPrefix(); p != "" {
				m.prefix[cc] = regexp.MustCompile(`^(?:` + p + `)`)
			}
		}
		if len(md.GetId()) != 2 {
			continue // non-geographic entities have no national format
		}
		r := regionPhone{cc: cc}
		if p := md.GetInternationalPrefix(); p != "" {
			r.idd = regexp.MustCompile(`^(?:` + p + `)`)
		}
		m.byRegion[md.GetId()] = r
	}
	// A national number is read with its region's national prefix rules,
	// which may differ from the main region of the calling code: keep a
	// region only when it is the main one or shares its prefix rule.
	for id, r := range m.byRegion {
		if phonenumbers.GetRegionCodeForCountryCode(r.cc) != id {
			delete(m.byRegion, id)
		}
	}
	return m
})
