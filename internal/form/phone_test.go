package form

import (
	"strconv"
	"testing"

	"github.com/nyaruka/phonenumbers"
)

// For every region and number type libphonenumber has an example of, the
// fast path must agree with the library: same validity for the number and
// for near misses (one digit more, one less), and the same E.164, written
// internationally and nationally.
func TestFastPathAgreesOnExampleNumbers(t *testing.T) {
	t.Parallel()
	types := []phonenumbers.PhoneNumberType{phonenumbers.FIXED_LINE, phonenumbers.MOBILE, phonenumbers.TOLL_FREE, phonenumbers.PREMIUM_RATE,
		phonenumbers.SHARED_COST, phonenumbers.VOIP, phonenumbers.PERSONAL_NUMBER, phonenumbers.PAGER, phonenumbers.UAN, phonenumbers.VOICEMAIL}
	checked, fast := 0, 0
	for region := range phonenumbers.GetSupportedRegions() {
		for _, typ := range types {
			ex := phonenumbers.GetExampleNumberForType(region, typ)
			if ex == nil {
				continue
			}
			cc := int(ex.GetCountryCode())
			nn := ex.GetNationalNumber()
			for _, n := range []uint64{nn, nn * 10, nn*10 + 7, nn / 10} {
				c32 := int32(cc)
				want := phonenumbers.IsValidNumber(&phonenumbers.PhoneNumber{CountryCode: &c32, NationalNumber: &n})
				if got := validNumber(cc, n); got != want {
					t.Errorf("%s %v +%d %d: compiled patterns say valid=%v, libphonenumber %v", region, typ, cc, n, got, want)
				}
				checked++
			}

			for _, written := range []string{
				"+" + strconv.Itoa(cc) + " " + strconv.FormatUint(nn, 10),
				phonenumbers.Format(ex, phonenumbers.INTERNATIONAL),
				phonenumbers.Format(ex, phonenumbers.NATIONAL),
			} {
				got, fe := normalizePhone(written, region)
				full, err := phonenumbers.Parse(written, region)
				if err != nil || !phonenumbers.IsValidNumber(full) {
					continue // the library does not read its own format back: nothing to compare
				}
				if fe != nil || got != phonenumbers.Format(full, phonenumbers.E164) {
					t.Errorf("%s %q: got %q (%v), libphonenumber %s", region, written, got, fe, phonenumbers.Format(full, phonenumbers.E164))
				}
				if _, _, ok := parseCommon(written, region); ok {
					fast++
				}
			}
		}
	}
	if checked < 1000 || fast < 500 {
		t.Fatalf("only %d validity checks and %d fast-path parses: the test is not covering the metadata", checked, fast)
	}
	t.Logf("%d validity checks, %d numbers read by the fast path", checked, fast)
}
