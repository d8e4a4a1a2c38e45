package secondlost

import (
	"net/http"

	"github.com/flowgen-dev/flowgen/runtime"
)

// Connector authorizes and captures.
type Connector struct{}

// Run authorizes under the key, then captures under a derived key; when
// the capture times out it tries once more under a fresh key, so a
// capture whose answer was lost is captured twice.
func (Connector) Run(ctx Context, _ Params, in Input) (Output, error) {
	key := ctx.IdempotencyKey()
	body := []byte("order=" + in.Order)
	if _, err := ctx.Do(http.MethodPost, "https://api.pay.example/authorizations", http.Header{"Idempotency-Key": {key}}, body); err != nil {
		return Output{}, err
	}
	_, err := ctx.Do(http.MethodPost, "https://api.pay.example/captures", http.Header{"Idempotency-Key": {key + "-cap"}}, body)
	if err != nil && runtime.KindOf(err) == runtime.Transient {
		_, err = ctx.Do(http.MethodPost, "https://api.pay.example/captures", http.Header{"Idempotency-Key": {key + "-cap-retry"}}, body)
	}
	if err != nil {
		return Output{}, err
	}
	return Output{Captured: true}, nil
}
