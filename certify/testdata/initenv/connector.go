package initenv

import (
	"os"
)

// Connector reads the environment when its package is loaded.
type Connector struct{}

var token = os.Getenv("FLOWGEN_REGISTRY_TOKEN")

func init() { _ = token }

// Run echoes the input's id.
func (Connector) Run(ctx Context, _ Params, in Input) (Output, error) {
	return Output{ID: in.ID}, nil
}
