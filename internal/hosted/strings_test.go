package hosted

import "testing"

// TestStringTablesHaveOneKeySet: every hosted page text exists in both
// languages (the Chinese page never falls back to English).
func TestStringTablesHaveOneKeySet(t *testing.T) {
	t.Parallel()
	for key := range enStrings {
		if zhStrings[key] == "" {
			t.Errorf("%q has no Chinese text", key)
		}
	}
	for key := range zhStrings {
		if enStrings[key] == "" {
			t.Errorf("%q has no English text", key)
		}
	}
}
