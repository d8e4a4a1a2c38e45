package runtype

import (
	"errors"
	"fmt"
	"time"

	"github.com/flowgen-dev/flowgen/flowtype"
)

// Error is a classified node or capability failure.
type Error struct {
	Kind flowtype.ErrorKind
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
func NewError(kind flowtype.ErrorKind, err error) *Error { return &Error{Kind: kind, Err: err} }

// Errorf classifies a formatted error.
func Errorf(kind flowtype.ErrorKind, format string, args ...any) *Error {
	return &Error{Kind: kind, Err: fmt.Errorf(format, args...)}
}

// KindOf returns the kind of err: the Kind of the first *Error in its
// chain, or Transient for unclassified errors (they may succeed when
// retried).
func KindOf(err error) flowtype.ErrorKind {
	var e *Error
	if errors.As(err, &e) {
		return e.Kind
	}
	return flowtype.Transient
}

// FailureOf is the failure kind that records an error of kind k.
func FailureOf(k flowtype.ErrorKind) FailureKind { return FailureKind(k.String()) }
