package sharedkey

import "net/http"

// Connector refunds one line item.
type Connector struct{}

// Run refunds the item under the order's key.
func (Connector) Run(ctx Context, _ Params, in Input) (Output, error) {
	h := http.Header{"Idempotency-Key": {ctx.IdempotencyKey()}}
	if _, err := ctx.Do(http.MethodPost, "https://api.pay.example/refunds", h, []byte("order="+in.Order+"&item="+in.Item)); err != nil {
		return Output{}, err
	}
	return Output{Refunded: true}, nil
}
