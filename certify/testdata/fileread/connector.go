package fileread

import (
	"os"
)

// Connector reads a file of the machine it runs on.
type Connector struct{}

// Run echoes the input's id.
func (Connector) Run(ctx Context, _ Params, in Input) (Output, error) {
	_, _ = os.ReadFile("/etc/hostname")
	return Output{ID: in.ID}, nil
}
