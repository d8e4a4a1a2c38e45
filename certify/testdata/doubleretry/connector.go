package doubleretry

import (
	"net/http"

	"github.com/flowgen-dev/flowgen/runtime"
)

// Connector retries by itself although the orchestrator owns retries.
type Connector struct{}

// Run posts up to three times.
func (Connector) Run(ctx Context, _ Params, in Input) (Output, error) {
	var err error
	for range 3 {
		if _, err = ctx.Do(http.MethodPost, "https://api.pay.example/pay", http.Header{"Idempotency-Key": {ctx.IdempotencyKey()}}, nil); err == nil || runtime.KindOf(err) != runtime.Transient {
			break
		}
	}
	if err != nil {
		return Output{}, err
	}
	return Output{N: in.N}, nil
}
