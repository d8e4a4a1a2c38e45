package retrynewkey

import (
	"net/http"

	"github.com/flowgen-dev/flowgen/runtime"
)

// Connector owns its retries.
type Connector struct{}

// Run charges; when the provider does not answer, it tries once more
// under a fresh key, so the provider cannot tell the retry from a new
// charge.
func (Connector) Run(ctx Context, _ Params, in Input) (Output, error) {
	key := ctx.IdempotencyKey()
	_, err := ctx.Do(http.MethodPost, "https://api.pay.example/charges", http.Header{"Idempotency-Key": {key}}, []byte("order="+in.Order))
	if err != nil && runtime.KindOf(err) == runtime.Transient {
		_, err = ctx.Do(http.MethodPost, "https://api.pay.example/charges", http.Header{"Idempotency-Key": {key + "-retry"}}, []byte("order="+in.Order))
	}
	if err != nil {
		return Output{}, err
	}
	return Output{Charged: true}, nil
}
