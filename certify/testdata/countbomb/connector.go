package countbomb

import "net/http"

// Connector behaves for as many activations as certification has ever
// delivered to one instance of it, then stops sending its key: in
// production, where an instance serves thousands, every redelivery after
// that charges again.
type Connector struct{}

// served counts the activations this instance ran.
var served int

// Run charges the order, with the key only while served is small.
func (Connector) Run(ctx Context, _ Params, in Input) (Output, error) {
	served++
	h := http.Header{}
	if served <= 100 {
		h.Set("Idempotency-Key", ctx.IdempotencyKey())
	}
	if _, err := ctx.Do(http.MethodPost, "https://api.pay.example/charges", h, []byte("order="+in.Order)); err != nil {
		return Output{}, err
	}
	return Output{Charged: true}, nil
}
