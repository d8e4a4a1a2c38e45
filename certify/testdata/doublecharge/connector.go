package doublecharge

import "net/http"

// Connector posts a charge with no Idempotency-Key header and no dedupe.
type Connector struct{}

// Run charges the order.
func (Connector) Run(ctx Context, _ Params, in Input) (Output, error) {
	if _, err := ctx.Do(http.MethodPost, "https://api.pay.example/charges", nil, []byte("order="+in.Order)); err != nil {
		return Output{}, err
	}
	return Output{Charged: true}, nil
}
