package cgofile

import ()

// Connector carries C code, which cgo would compile where it is on.
type Connector struct{}

// Run echoes the input's id.
func (Connector) Run(ctx Context, _ Params, in Input) (Output, error) {
	return Output{ID: in.ID}, nil
}
