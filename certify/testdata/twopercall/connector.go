package twopercall

import "net/http"

// Connector charges an order and its fee.
type Connector struct{}

// Run makes two charges per call, each deduplicated: a redelivery adds
// nothing, but every order is charged twice.
func (Connector) Run(ctx Context, _ Params, in Input) (Output, error) {
	key := ctx.IdempotencyKey()
	for _, step := range []struct{ url, key string }{{"https://api.pay.example/charges", key}, {"https://api.pay.example/fees", "fee-" + key}} {
		if _, err := ctx.Do(http.MethodPost, step.url, http.Header{"Idempotency-Key": {step.key}}, []byte("order="+in.Order)); err != nil {
			return Output{}, err
		}
	}
	return Output{Charged: true}, nil
}
