package excludedfile

import ()

// Connector keeps code in a file the certified build leaves out.
type Connector struct{}

// Run echoes the input's id.
func (Connector) Run(ctx Context, _ Params, in Input) (Output, error) {
	return Output{ID: in.ID}, nil
}
