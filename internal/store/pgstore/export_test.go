package pgstore

import "context"

// OpenWithFunctions opens the store as a binary whose functions.sql is
// sql would: the tests' second binary, of another functions version.
func OpenWithFunctions(ctx context.Context, opts Options, sql string) (*Store, error) {
	return open(ctx, opts, sql)
}

// FunctionsVersionOf is the version a functions file carries.
func FunctionsVersionOf(sql string) int { return mustFunctionsVersion(sql) }
