package problem

// Sentinel makes an error of another package that names its problem code
// (the journal's, the store's and the accounts' errors): callers test for
// it with errors.Is, and From answers with its code and its message. Each
// is listed by Sentinels, for the test that its code is in Codes.
func Sentinel(msg, code string) error {
	e := &sentinel{msg, code}
	sentinels = append(sentinels, e)
	return e
}

type sentinel struct{ msg, code string }

func (e *sentinel) Error() string { return e.msg }

// ProblemCode is the problem code an HTTP answer gives for the error.
func (e *sentinel) ProblemCode() string { return e.code }

// sentinels are made as their packages start, before anything reads them.
var sentinels []*sentinel

// Sentinels lists the errors Sentinel made, with their codes.
func Sentinels() map[string]string {
	out := make(map[string]string, len(sentinels))
	for _, e := range sentinels {
		out[e.msg] = e.code
	}
	return out
}
