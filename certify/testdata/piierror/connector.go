package piierror

import (
	"strings"

	"github.com/flowgen-dev/flowgen/runtime"
)

// Connector greets company customers.
type Connector struct{}

// Run fails for an address outside the company, naming it in the error,
// which reaches job state and logs.
func (Connector) Run(ctx Context, _ Params, in Input) (Output, error) {
	if !strings.HasSuffix(in.Email, "@corp.example") {
		return Output{}, runtime.Errorf(runtime.Permanent, "%s is not a company address", in.Email)
	}
	return Output{ID: in.ID, Greeting: "Hello"}, nil
}
