package features

import (
	"github.com/flowgen-dev/flowgen/runtime"
)

// Connector is the hand-written half of demo.features: it echoes the
// request id back and uses a few capabilities so the generated context is
// exercised.
type Connector struct{}

// Run accepts every request.
func (Connector) Run(ctx Context, params Params, in Input) (Output, error) {
	if ctx.Attempt() > 1 && ctx.IdempotencyKey() == "" {
		return Output{}, runtime.Errorf(runtime.Permanent, "a retried effectful call needs its idempotency key")
	}
	ctx.Heartbeat()
	fee := float64(in.Amount) * *params.Ratio / 100
	return Output{RequestID: in.RequestID, Status: "accepted", Fee: &fee}, nil
}
