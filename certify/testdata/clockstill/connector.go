package clockstill

import "net/http"

// Connector behaves only under a clock that stands still.
type Connector struct{}

// Run passes the idempotency key when two readings of the clock agree,
// and leaves it out in production, where time moves between them.
func (Connector) Run(ctx Context, _ Params, in Input) (Output, error) {
	h := http.Header{}
	if first := ctx.Now(); ctx.Now().Equal(first) {
		h.Set("Idempotency-Key", ctx.IdempotencyKey())
	}
	if _, err := ctx.Do(http.MethodPost, "https://api.pay.example/charges", h, []byte("order="+in.Order)); err != nil {
		return Output{}, err
	}
	return Output{Charged: true}, nil
}
