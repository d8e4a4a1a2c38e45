package depclock

import (
	"github.com/flowgen-dev/flowgen/certify/testdata/internal/lib/timeutil"
)

// Connector reads the clock inside a library it depends on.
type Connector struct{}

// Run echoes the input's id.
func (Connector) Run(ctx Context, _ Params, in Input) (Output, error) {
	_ = timeutil.Today()
	return Output{ID: in.ID}, nil
}
