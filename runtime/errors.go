package runtime

import (
	"github.com/flowgen-dev/flowgen/flowtype"
	"github.com/flowgen-dev/flowgen/runtime/runtype"
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
type Error = runtype.Error

// NewError classifies err.
func NewError(kind ErrorKind, err error) *Error { return runtype.NewError(kind, err) }

// Errorf classifies a formatted error.
func Errorf(kind ErrorKind, format string, args ...any) *Error {
	return runtype.Errorf(kind, format, args...)
}

// KindOf returns the kind of err: the Kind of the first *Error in its
// chain, or Transient for unclassified errors (they may succeed when
// retried).
func KindOf(err error) ErrorKind { return runtype.KindOf(err) }
