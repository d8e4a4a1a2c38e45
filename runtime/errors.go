package runtime

import (
	"errors"
	"fmt"
	"time"

	"github.com/flowgen-dev/flowgen/flowtype"
)

// ErrorKind classifies a failed call; retry policies act on it.
type ErrorKind = flowtype.ErrorKind

// The error kinds.
const (
	Transient      = flowtype.Transient
	Auth           = flowtype.Auth
	RateLimited    = flowtype.RateLimited
	Permanent      = flowtype.Permanent
	SchemaMismatch = flowtype.SchemaMismatch
	PolicyDenied   = flowtype.PolicyDenied
)

// Error is a classified node or capability failure.
type Error struct {
	Kind ErrorKind
	// RetryAfter is the delay the other side asked for (429 Retry-After);
	// zero when it did not say.
	RetryAfter time.Duration
	// Status is the HTTP status of the answer the error comes from; 0
	// when there was no answer (a timeout, a refused connection, a policy
	// refusal), so the request's outcome is unknown or it was never sent.
	Status int
	Err    error
}

func (e *Error) Error() string {
	if e.RetryAfter > 0 {
		return fmt.Sprintf("%s (retry after %s): %v", e.Kind, e.RetryAfter, e.Err)
	}
	return fmt.Sprintf("%s: %v", e.Kind, e.Err)
}

func (e *Error) Unwrap() error { return e.Err }

// NewError classifies err.
func NewError(kind ErrorKind, err error) *Error { return &Error{Kind: kind, Err: err} }

// Errorf classifies a formatted error.
func Errorf(kind ErrorKind, format string, args ...any) *Error {
	return &Error{Kind: kind, Err: fmt.Errorf(format, args...)}
}

// KindOf returns the kind of err: the Kind of the first *Error in its
// chain, or Transient for unclassified errors (they may succeed when
// retried).
func KindOf(err error) ErrorKind {
	var e *Error
	if errors.As(err, &e) {
		return e.Kind
	}
	return Transient
}

// ErrUnknownFlow: the engine has no flow of that name registered.
var ErrUnknownFlow = errors.New("not registered with this engine")

// FailureKind is what a failed activation's result records: the name of an
// ErrorKind for a failure of the node (or of a policy), or one of the
// outcomes only the engine produces, Canceled and NotDelivered.
type FailureKind string

// The failures only the engine records.
const (
	// Canceled: the job was killed before the activation ran.
	Canceled FailureKind = "Canceled"
	// NotDelivered: an at-most-once activation whose earlier attempt did
	// not commit, so it is not run again.
	NotDelivered FailureKind = "NotDelivered"
)

// failureOf is the failure kind that records an error of kind k.
func failureOf(k ErrorKind) FailureKind { return FailureKind(k.String()) }
