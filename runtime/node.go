package runtime

import (
	"encoding/json"
	"fmt"

	"github.com/flowgen-dev/flowgen/flowtype"
	"github.com/flowgen-dev/flowgen/runtime/runtype"
)

// Effects and Determinism are the lattices a node declares.
type (
	Effects     = flowtype.Effects
	Determinism = flowtype.Determinism
	RetryOwner  = flowtype.RetryOwner
	// IdemScope is what an idempotency key is unique within.
	IdemScope = flowtype.IdemScope
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
	ScopeNode         = flowtype.ScopeNode
	ScopeEdge         = flowtype.ScopeEdge
	ScopePartition    = flowtype.ScopePartition
)

// KeyNode is the node name an activation's idempotency key is computed
// under, scoped as the connector's idempotency scope says: see
// runtype.KeyNode. Pass it to a generated IdempotencyKey function to
// compute the key an activation gets.
func KeyNode(alias string, scope IdemScope, via, partition string) string {
	return runtype.KeyNode(alias, scope, via, partition)
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
	// One allocation for the three, which escape through the decoders'
	// and validators' interfaces.
	v := new(struct {
		p   P
		in  I
		out O
	})
	if err := t.decodeValid(params, &v.p, "params"); err != nil {
		return nil, err
	}
	if err := t.decodeValid(input, &v.in, "input"); err != nil {
		return nil, err
	}
	var err error
	if v.out, err = t.run(ctx, v.p, v.in); err != nil {
		return nil, err
	}
	out := &v.out
	if v, ok := any(out).(interface{ Validate() error }); ok {
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
		if err := unmarshal(data, dst); err != nil {
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
