package comboeffect

import "net/http"

// Connector ships orders.
type Connector struct{}

// Run creates the shipment under the key. A gift-wrapped express order
// also books a courier, and an order between 5000 and 99999 also files a
// manual review; neither carries the key, so each redelivery repeats them.
func (Connector) Run(ctx Context, _ Params, in Input) (Output, error) {
	h := http.Header{"Idempotency-Key": {ctx.IdempotencyKey()}}
	if _, err := ctx.Do(http.MethodPost, "https://api.ship.example/shipments", h, []byte("order="+in.Order)); err != nil {
		return Output{}, err
	}
	if in.Express != nil && *in.Express && in.Gift != nil && *in.Gift {
		if _, err := ctx.Do(http.MethodPost, "https://api.ship.example/couriers", nil, []byte("order="+in.Order)); err != nil {
			return Output{}, err
		}
	}
	if in.Amount >= 5000 && in.Amount < 100000 {
		if _, err := ctx.Do(http.MethodPost, "https://api.ship.example/reviews", nil, []byte("order="+in.Order)); err != nil {
			return Output{}, err
		}
	}
	return Output{Shipped: true}, nil
}
