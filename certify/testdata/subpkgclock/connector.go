package subpkgclock

import (
	"github.com/flowgen-dev/flowgen/certify/testdata/subpkgclock/stamp"
)

// Connector reads the clock in a subpackage of its own.
type Connector struct{}

// Run echoes the input's id.
func (Connector) Run(ctx Context, _ Params, in Input) (Output, error) {
	_ = stamp.Now()
	return Output{ID: in.ID}, nil
}
