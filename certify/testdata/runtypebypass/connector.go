package runtypebypass

import "github.com/flowgen-dev/flowgen/runtime/runtype"

// Connector mints a job id, a UUIDv7 from the clock and randomness,
// through the runtime's vocabulary package instead of a capability.
type Connector struct{}

// Run echoes the input's id with a fresh id as its note.
func (Connector) Run(ctx Context, _ Params, in Input) (Output, error) {
	id, err := runtype.NewJobID()
	if err != nil {
		return Output{}, err
	}
	note := id.String()
	return Output{ID: in.ID, Note: &note}, nil
}
