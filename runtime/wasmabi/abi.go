// Package wasmabi is the boundary between a confined connector (a
// WebAssembly module built by package wasmbuild, running
// runtime/wasmguest) and its host (runtime/wasmhost): the names of the
// functions each side offers, and the byte layout of what crosses.
//
// The module exports three functions: Alloc (the host asks for a buffer
// of at least n bytes in the module's memory and writes a request there;
// the buffer stays the module's request buffer, which the host reuses
// for every later request that fits in it, without calling Alloc again),
// Run (one activation: a RunRequest of n bytes in the request buffer in,
// a RunResponse out, both in the module's memory) and Version (the ABI
// version the module speaks). The host
// exports, in module Module, one function per capability the connector's
// spec declares (Imports) and the plumbing every module needs (Reply,
// Heartbeat). A capability call passes a request in the module's memory
// and gets the length of the host's reply, which the module then fetches
// with Reply into a buffer of its own: no call ever enters the module
// while the module waits for the host.
//
// Every message is a sequence of fields, each little-endian: integers
// fixed-width, byte strings and strings a uint32 length then the bytes.
// Reader never panics and never allocates more than its input: a
// malformed message is an error, whichever side wrote it.
package wasmabi

import (
	"errors"
	"strings"
	"time"

	"github.com/flowgen-dev/flowgen/flowtype"
	"github.com/flowgen-dev/flowgen/runtime"
)

// Version is the ABI version this package speaks; a module that reports
// another one is refused at load.
const Version = 3

// Module is the import module name of the host functions.
const Module = "flowgen"

// The module's exports.
const (
	ExportAlloc   = "flowgen_alloc"
	ExportRun     = "flowgen_run"
	ExportVersion = "flowgen_abi_version"
)

// Host function names. Each capability call is
// func(requestPtr, requestLen uint32) (replyLen uint32); Reply is
// func(bufferPtr uint32), which copies the pending reply; Heartbeat is
// func(); Settle is func(on uint32): while on, the module's sleeps
// advance its clocks without waiting (SettleSpan, SettleWaits);
// ClockNow and RNG take nothing and return a uint64.
const (
	FuncReply         = "reply"
	FuncHeartbeat     = "heartbeat"
	FuncSettle        = "settle"
	FuncHTTPGet       = "http_get"
	FuncHTTPGetPinned = "http_get_pinned"
	FuncHTTPDo        = "http_do"
	FuncKVGet         = "kv_get"
	FuncKVPut         = "kv_put"
	FuncBlobRead      = "blob_read"
	FuncBlobWrite     = "blob_write"
	FuncDBQuery       = "db_query"
	FuncDBExec        = "db_exec"
	FuncDedupe        = "dedupe_put"
	FuncSecret        = "secret"
	FuncClockNow      = "clock_now"
	FuncRNG           = "rng_u64"
)

// Plumbing are the host functions every module may import, whatever its
// spec declares: they reach nothing outside the module.
var Plumbing = []string{FuncReply, FuncHeartbeat, FuncSettle}

// After Run returns, the module settles: it sleeps SettleSpan with Settle
// on, so that every timer the activation left fires at once, in virtual
// time, while the activation's capabilities are still bound, and its
// effects are the activation's. An activation is over when nothing it
// started can still run. A module that waits more than SettleWaits times
// while settling (a ticker, a timer that sets itself again) never
// settles: the host closes the instance.
const (
	SettleSpan  = 100 * 365 * 24 * time.Hour
	SettleWaits = 64
)

// InstanceActivations is how many activations one instance of a module
// serves before the host closes it and starts another: whatever state a
// module keeps in its memory lives at most that many activations, in
// production as in certification, whose fixtures check delivers that
// many to one instance and judges every one. A connector that counts its
// activations cannot see more in production than certification showed.
const InstanceActivations = 256

// Imports returns the host functions a capability lets a module import;
// nil for a name that is not a capability.
func Imports(c flowtype.Capability) []string {
	switch c {
	case flowtype.HTTPRead:
		return []string{FuncHTTPGet}
	case flowtype.HTTPReadPinned:
		return []string{FuncHTTPGetPinned}
	case flowtype.HTTPWrite:
		return []string{FuncHTTPDo}
	case flowtype.KVRead:
		return []string{FuncKVGet}
	case flowtype.KVWrite:
		return []string{FuncKVPut}
	case flowtype.BlobRead, flowtype.BlobReadHash:
		return []string{FuncBlobRead}
	case flowtype.BlobWrite:
		return []string{FuncBlobWrite}
	case flowtype.DBRead:
		return []string{FuncDBQuery}
	case flowtype.DBWrite:
		return []string{FuncDBQuery, FuncDBExec}
	case flowtype.Dedupe:
		return []string{FuncDedupe}
	case flowtype.Secrets:
		return []string{FuncSecret}
	case flowtype.Clock:
		return []string{FuncClockNow}
	case flowtype.RNG, flowtype.RNGSeeded:
		return []string{FuncRNG}
	}
	return nil
}

// Limits on what crosses the boundary. A request or reply over its limit
// is refused (PolicyDenied) before it is copied.
const (
	// MaxMessage bounds any one message in either direction: a request,
	// a capability reply, an activation's output.
	MaxMessage = 32 << 20
)

// Status is the first byte of every reply and of a RunResponse.
type Status uint8

// The statuses: the call succeeded and its result follows, or it failed
// and an Error follows.
const (
	StatusOK Status = iota
	StatusError
)

// Error is a failure as it crosses the boundary: its kind drives retries.
type Error struct {
	Kind flowtype.ErrorKind
	// RetryAfter is the delay the other side asked for, in nanoseconds.
	RetryAfter int64
	// Status is the HTTP status the error comes from, 0 when none.
	Status  uint32
	Message string
}

// ErrorOf is err as it crosses the boundary: its kind (runtime.KindOf),
// retry delay and status, and its message without the kind a classified
// error prints first, which the receiving side prints again.
func ErrorOf(err error) Error {
	e := Error{Kind: runtime.KindOf(err), Message: err.Error()}
	var re *runtime.Error
	if errors.As(err, &re) {
		e.RetryAfter, e.Status = int64(re.RetryAfter), uint32(re.Status)
		if re == err && re.Err != nil {
			e.Message = re.Err.Error()
		}
	}
	e.Message = strings.TrimPrefix(e.Message, e.Kind.String()+": ")
	return e
}

// Err is e as the receiving side returns it: a *runtime.Error of its
// kind, retry delay and status.
func (e Error) Err() error {
	return &runtime.Error{Kind: e.Kind, RetryAfter: time.Duration(e.RetryAfter), Status: int(e.Status), Err: errors.New(e.Message)}
}

// AppendError appends e.
func (w *Writer) AppendError(e Error) {
	w.Uint8(uint8(e.Kind))
	w.Int64(e.RetryAfter)
	w.Uint32(e.Status)
	w.String(e.Message)
}

// Error reads an Error.
func (r *Reader) Error() Error {
	return Error{Kind: flowtype.ErrorKind(r.Uint8()), RetryAfter: r.Int64(), Status: r.Uint32(), Message: r.String()}
}
