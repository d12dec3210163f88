// Package sdkjs holds formd's browser and mini-program SDK. It is embedded
// so that formd serves it at /sdk/formd.js and `go build` never needs npm:
// formd.js is hand-written, dependency-free source, shipped as is.
package sdkjs

import _ "embed" // for go:embed

//go:embed formd.js
var source string

// Source is formd.js, the SDK as shipped.
func Source() string { return source }
