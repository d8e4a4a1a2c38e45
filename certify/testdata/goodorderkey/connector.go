package goodorderkey

import "net/http"

// Connector posts a charge whose Idempotency-Key is the order id, the key
// field itself, as payment providers' own guides suggest.
type Connector struct{}

// Run charges the order.
func (Connector) Run(ctx Context, _ Params, in Input) (Output, error) {
	h := http.Header{"Idempotency-Key": {"order-" + in.Order}}
	if _, err := ctx.Do(http.MethodPost, "https://api.pay.example/charges", h, []byte("order="+in.Order)); err != nil {
		return Output{}, err
	}
	return Output{Charged: true}, nil
}
