package form

import (
	"fmt"
	"math/big"
	"slices"
	"strconv"
	"strings"
	"unicode"

	"golang.org/x/text/unicode/norm"
)

// How formd compares submitted values. Two spellings a person cannot tell
// apart must be one participant and one fingerprint: full-width letters
// and digits, a zero-width space pasted from a chat app, a right-to-left
// mark, a soft hyphen or a byte-order mark. Every value is therefore
// compared in NFKC with the default-ignorable and format characters
// removed, e-mail addresses case-folded; a text field may ask for more
// (`normalize: [strip_spaces, upper]` for an ID number).
//
// What is stored is what the person typed, cleaned of characters that
// carry no meaning (bidi controls, zero-width spaces, BOMs, soft hyphens)
// but not folded: a name keeps its full-width brackets. The characters
// that do carry meaning in text — the zero-width joiner and non-joiner of
// emoji sequences and Indic and Persian scripts, variation selectors and
// emoji tags — stay in the stored text and go only from the comparison.

// Text normalizations a text field may declare with `normalize:`.
const (
	NormNFKC        = "nfkc" // always applied; accepted so a list can say so
	NormStripSpaces = "strip_spaces"
	NormStripPunct  = "strip_punctuation"
	NormUpper       = "upper"
	NormLower       = "lower"
)

var textNormalizations = []string{NormNFKC, NormStripSpaces, NormStripPunct, NormUpper, NormLower}

// invisible says r is a default-ignorable code point or a format
// character: nothing a person sees, so nothing that may tell two
// participants apart. White space is not in the set (it is trimmed or
// collapsed instead).
func invisible(r rune) bool {
	if r < 0x80 {
		return false
	}
	return unicode.Is(unicode.Cf, r) || unicode.Is(unicode.Variation_Selector, r) ||
		unicode.Is(unicode.Other_Default_Ignorable_Code_Point, r)
}

// meaningful says an invisible character changes how text looks, so the
// stored text keeps it: ZWNJ and ZWJ, variation selectors, emoji tags.
func meaningful(r rune) bool {
	return r == 0x200C || r == 0x200D || unicode.Is(unicode.Variation_Selector, r) || (r >= 0xE0020 && r <= 0xE007F)
}

// isASCII says s has no byte above 0x7f, the common case that skips every
// Unicode step.
func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}

// cleanInvisible removes invisible characters from s; meaningful ones stay
// when keepMeaningful is set.
func cleanInvisible(s string, keepMeaningful bool) string {
	if isASCII(s) {
		return s
	}
	drop := func(r rune) bool { return invisible(r) && !(keepMeaningful && meaningful(r)) }
	if strings.IndexFunc(s, drop) < 0 {
		return s
	}
	return strings.Map(func(r rune) rune {
		if drop(r) {
			return -1
		}
		return r
	}, s)
}

// fold is the comparison form of any value: NFKC, every invisible
// character removed, runs of white space made one space, trimmed.
func fold(s string) string {
	if !isASCII(s) {
		s = norm.NFKC.String(cleanInvisible(s, false))
		// NFKC can produce invisible characters from compatibility forms.
		s = cleanInvisible(s, false)
	}
	return collapseSpaces(s)
}

// collapseSpaces trims s and makes each run of white space one space.
func collapseSpaces(s string) string {
	s = strings.TrimSpace(s)
	prev, clean := false, true
	for _, r := range s {
		sp := unicode.IsSpace(r)
		if sp && (prev || r != ' ') {
			clean = false
			break
		}
		prev = sp
	}
	if clean {
		return s
	}
	return strings.Join(strings.Fields(s), " ")
}

// applyNormalize applies a text field's declared normalizations to its
// folded value.
func applyNormalize(s string, opts []string) string {
	for _, o := range opts {
		switch o {
		case NormStripSpaces:
			s = strings.Map(func(r rune) rune {
				if unicode.IsSpace(r) {
					return -1
				}
				return r
			}, s)
		case NormStripPunct:
			s = strings.Map(func(r rune) rune {
				if unicode.IsPunct(r) || unicode.Is(unicode.Pd, r) {
					return -1
				}
				return r
			}, s)
		case NormUpper:
			s = strings.ToUpper(s)
		case NormLower:
			s = strings.ToLower(s)
		}
	}
	return s
}

func checkNormalize(opts []string) error {
	for _, o := range opts {
		if !slices.Contains(textNormalizations, o) {
			return fmt.Errorf("normalize: %q is not known; use any of %s", o, strings.Join(textNormalizations, ", "))
		}
	}
	if slices.Contains(opts, NormUpper) && slices.Contains(opts, NormLower) {
		return fmt.Errorf("normalize: upper and lower cannot both apply")
	}
	return nil
}

// Limits on a number's digits: enough for any amount, count or ID a form
// asks for, and exact (a number is kept as the decimal it was written, not
// rounded through a float).
const (
	maxIntDigits  = 30
	maxFracDigits = 20
)

// decimal is a number as a person or a JSON encoder writes it, in its
// canonical decimal form: no exponent, no leading zeros, no trailing
// fractional zeros, no "-0".
type decimal struct {
	canon string
	// digits counts the significant digits; beyond 15 a float64 cannot
	// hold the value exactly, and bounds are compared exactly instead.
	digits int
}

// parseDecimal reads decimal notation only: an optional sign, digits with
// an optional fractional part, an optional exponent. Hex floats, digit
// separators, Inf and NaN are not numbers here; values beyond the digit
// limits are refused rather than rounded.
func parseDecimal(s string) (decimal, bool) {
	i := 0
	neg := false
	if i < len(s) && (s[i] == '-' || s[i] == '+') {
		neg = s[i] == '-'
		i++
	}
	start := i
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	intPart := s[start:i]
	frac := ""
	if i < len(s) && s[i] == '.' {
		i++
		fs := i
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
		frac = s[fs:i]
	}
	if intPart == "" && frac == "" {
		return decimal{}, false
	}
	exp := 0
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		es := i
		if i < len(s) && (s[i] == '-' || s[i] == '+') {
			i++
		}
		ds := i
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
		if i == ds || i-ds > 4 {
			return decimal{}, false
		}
		n, err := strconv.Atoi(s[es:i])
		if err != nil {
			return decimal{}, false
		}
		exp = n
	}
	if i != len(s) {
		return decimal{}, false
	}
	// Shift the point by the exponent over the digit string.
	digits := intPart + frac
	point := len(intPart) + exp
	digits = strings.TrimLeft(digits, "0")
	point -= len(intPart+frac) - len(digits)
	if digits == "" {
		return decimal{canon: "0", digits: 1}, true
	}
	trimmed := strings.TrimRight(digits, "0")
	intDigits := max(point, 0)
	fracDigits := max(len(trimmed)-point, 0)
	if intDigits > maxIntDigits || fracDigits > maxFracDigits {
		return decimal{}, false
	}
	var b strings.Builder
	if neg {
		b.WriteByte('-')
	}
	switch {
	case point <= 0:
		b.WriteString("0.")
		b.WriteString(strings.Repeat("0", -point))
		b.WriteString(trimmed)
	case point >= len(trimmed):
		b.WriteString(trimmed)
		b.WriteString(strings.Repeat("0", point-len(trimmed)))
	default:
		b.WriteString(trimmed[:point])
		b.WriteByte('.')
		b.WriteString(trimmed[point:])
	}
	return decimal{canon: b.String(), digits: len(trimmed)}, true
}

// isInteger says the decimal has no fractional part.
func (d decimal) isInteger() bool { return !strings.Contains(d.canon, ".") }

// cmp compares two decimals: -1, 0 or +1. Up to 15 significant digits a
// float64 orders them exactly; beyond, they are compared as rationals.
func (d decimal) cmp(o decimal) int {
	if d.digits <= 15 && o.digits <= 15 {
		a, errA := strconv.ParseFloat(d.canon, 64)
		b, errB := strconv.ParseFloat(o.canon, 64)
		if errA == nil && errB == nil {
			switch {
			case a < b:
				return -1
			case a > b:
				return 1
			}
			return 0
		}
	}
	a, okA := new(big.Rat).SetString(d.canon)
	b, okB := new(big.Rat).SetString(o.canon)
	if !okA || !okB {
		return 0
	}
	return a.Cmp(b)
}
