package sqlitejournal

// SetAfterLookup has queueAsync call fn between its lookup and its record
// (TestAsyncRetryDuringCommit). Set it before any append.
func SetAfterLookup(j *Journal, fn func()) { j.afterLookup = fn }
