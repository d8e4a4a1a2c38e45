package runtime

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/flowgen-dev/flowgen/flowtype"
)

// Effects and Determinism are the lattices a node declares.
type (
	Effects     = flowtype.Effects
	Determinism = flowtype.Determinism
	RetryOwner  = flowtype.RetryOwner
)

// The lattice values and retry owners generated code refers to.
const (
	Pure              = flowtype.Pure
	ReadOnly          = flowtype.ReadOnly
	Effectful         = flowtype.Effectful
	Strict            = flowtype.Strict
	Stable            = flowtype.Stable
	BestEffort        = flowtype.BestEffort
	Nondeterministic  = flowtype.Nondeterministic
	RetryNone         = flowtype.RetryNone
	RetryConnector    = flowtype.RetryConnector
	RetryOrchestrator = flowtype.RetryOrchestrator
)

// RetryPolicy says how the orchestrator retries a failed activation. The
// zero value means one attempt.
type RetryPolicy struct {
	InitialInterval    time.Duration
	BackoffCoefficient float64
	MaxInterval        time.Duration
	MaxAttempts        int
	// NonRetryable kinds fail the activation at once. Permanent,
	// SchemaMismatch and PolicyDenied never retry whatever the list says.
	NonRetryable []ErrorKind
}

// Backoff returns the delay before attempt (2 for the first retry).
func (p RetryPolicy) Backoff(attempt int) time.Duration {
	d := float64(p.InitialInterval)
	coef := p.BackoffCoefficient
	if coef < 1 {
		coef = 1
	}
	for i := 2; i < attempt; i++ {
		d *= coef
		if p.MaxInterval > 0 && d >= float64(p.MaxInterval) {
			return p.MaxInterval
		}
	}
	if p.MaxInterval > 0 && time.Duration(d) > p.MaxInterval {
		return p.MaxInterval
	}
	return time.Duration(d)
}

// Retryable reports whether an error of kind may be retried after attempt
// attempts.
func (p RetryPolicy) Retryable(kind ErrorKind, attempt int) bool {
	if attempt >= max(p.MaxAttempts, 1) {
		return false
	}
	switch kind {
	case Permanent, SchemaMismatch, PolicyDenied:
		return false
	}
	for _, k := range p.NonRetryable {
		if k == kind {
			return false
		}
	}
	return true
}

// NodeInfo is what the runtime needs to know about a connector; generated
// code fills it from the spec.
type NodeInfo struct {
	ID          string
	Version     string
	Effects     Effects
	Determinism Determinism
	RetryOwner  RetryOwner
	Retry       RetryPolicy
	// KeySchema names the idempotency key schema (id@major); KeyFields are
	// the input fields that form the key, in spec order.
	KeySchema string
	KeyFields []string
	// Capabilities names what the node may use (flowtype capability
	// names: "http.read", "kv.write", ...); only these are granted.
	Capabilities []string
	// Egress is the host allowlist for network capabilities.
	Egress []string
	// Timeout bounds one attempt; zero means the engine default.
	Timeout time.Duration
	// Redact, when set, removes the values whose data class is not public
	// from a decoding or validation error of part ("params", "input" or
	// "output") before the error reaches job state and logs. Generated
	// nodes set it from their data-class table.
	Redact func(part string, err error) error
}

// Runner is a node at the runtime boundary: JSON in, JSON out. Generated
// code implements it with Typed; hand-written runners are for tests.
type Runner interface {
	Info() NodeInfo
	Run(ctx *Context, params, input json.RawMessage) (json.RawMessage, error)
}

// Typed adapts a typed node function to Runner: params and input are decoded
// (a decode failure is SchemaMismatch) and validated when they implement
// Validate() error, and the output is validated the same way (a node that
// breaks its own output schema fails with SchemaMismatch) and encoded.
func Typed[P, I, O any](info NodeInfo, run func(ctx *Context, params P, in I) (O, error)) Runner {
	return typedRunner[P, I, O]{info, run}
}

type typedRunner[P, I, O any] struct {
	info NodeInfo
	run  func(*Context, P, I) (O, error)
}

func (t typedRunner[P, I, O]) Info() NodeInfo { return t.info }

func (t typedRunner[P, I, O]) Run(ctx *Context, params, input json.RawMessage) (json.RawMessage, error) {
	var p P
	var in I
	if err := t.decodeValid(params, &p, "params"); err != nil {
		return nil, err
	}
	if err := t.decodeValid(input, &in, "input"); err != nil {
		return nil, err
	}
	out, err := t.run(ctx, p, in)
	if err != nil {
		return nil, err
	}
	if v, ok := any(&out).(interface{ Validate() error }); ok {
		if err := v.Validate(); err != nil {
			return nil, NewError(SchemaMismatch, fmt.Errorf("output breaks its schema (a bug in the node): %w", t.redact("output", err)))
		}
	}
	b, err := json.Marshal(out)
	if err != nil {
		return nil, NewError(SchemaMismatch, fmt.Errorf("encode output: %w", err))
	}
	return b, nil
}

func (t typedRunner[P, I, O]) redact(part string, err error) error {
	if t.info.Redact == nil {
		return err
	}
	return t.info.Redact(part, err)
}

func (t typedRunner[P, I, O]) decodeValid(data json.RawMessage, dst any, what string) error {
	if _, strict := dst.(json.Unmarshaler); strict && (len(data) == 0 || string(data) == "null") {
		data = json.RawMessage("{}") // generated types report missing required fields
	}
	if len(data) > 0 && string(data) != "null" {
		if err := json.Unmarshal(data, dst); err != nil {
			return NewError(SchemaMismatch, fmt.Errorf("decode %s: %w", what, t.redact(what, err)))
		}
	}
	if v, ok := dst.(interface{ Validate() error }); ok {
		if err := v.Validate(); err != nil {
			return NewError(SchemaMismatch, fmt.Errorf("%s: %w", what, t.redact(what, err)))
		}
	}
	return nil
}
