// Package sdkjs holds formd's browser and mini-program SDK. It is embedded
// so that formd serves it at /sdk/formd.js and `go build` never needs npm:
// formd.js is hand-written, dependency-free source, shipped as is.
package sdkjs

import _ "embed" // for go:embed

//go:embed formd.js
var source string

//go:embed messages.js
var messages string

//go:embed uploads.js
var uploads string

//go:embed challenge.js
var challengeJS string

//go:embed conditions.js
var conditionsJS string

//go:embed steps.js
var stepsJS string

//go:embed drafts.js
var draftsJS string

// Source is formd.js, the SDK as shipped.
func Source() string { return source }

// Messages is messages.js, the SDK's texts in English and Chinese: a
// module of its own (formd.js does not import it), for pages that do not
// bring their own texts, to be served beside formd.js.
func Messages() string { return messages }

// Uploads is uploads.js, the outbox's resumable file uploads (tus), which
// formd.js imports (import("./uploads.js")) only when a submission has a
// file: served beside formd.js.
func Uploads() string { return uploads }

// Challenge is challenge.js, the proof-of-work solver formd.js imports,
// served beside it.
func Challenge() string { return challengeJS }

// Conditions is conditions.js, the show_if evaluator (the rule of
// internal/form/conditions.go) and the hosted page's binding of it,
// served beside formd.js.
func Conditions() string { return conditionsJS }

// Steps is steps.js, the hosted page's pages one step at a time, served
// beside formd.js.
func Steps() string { return stepsJS }

// Drafts is drafts.js, the drafts API and the hosted page's saving and
// resuming of drafts, served beside formd.js.
func Drafts() string { return draftsJS }

//go:embed places.js
var placesJS string

// Places is places.js, which options of a session field are full (from
// the public definition's places), served beside formd.js.
func Places() string { return placesJS }
