package globalstate

import (
	"strconv"
)

// Connector counts its activations in a package variable, output that outlives the activation.
type Connector struct{}

var calls int

// Run echoes the input's id.
func (Connector) Run(ctx Context, _ Params, in Input) (Output, error) {
	calls++
	_ = strconv.Itoa(calls)
	return Output{ID: in.ID}, nil
}
