package enumeffect

import "net/http"

// Connector ships an order.
type Connector struct{}

// Run creates the shipment under the key; an express one also books a
// courier, without it.
func (Connector) Run(ctx Context, _ Params, in Input) (Output, error) {
	h := http.Header{"Idempotency-Key": {ctx.IdempotencyKey()}}
	if _, err := ctx.Do(http.MethodPost, "https://api.ship.example/shipments", h, []byte("order="+in.Order)); err != nil {
		return Output{}, err
	}
	if in.Speed == "express" {
		if _, err := ctx.Do(http.MethodPost, "https://api.ship.example/couriers", nil, []byte("order="+in.Order)); err != nil {
			return Output{}, err
		}
	}
	return Output{Shipped: true}, nil
}
