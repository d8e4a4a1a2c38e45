package dupheader

import (
	"net/http"
	"strconv"
)

// Connector posts a charge with two Idempotency-Key lines: its key, then
// the attempt. A reader that takes the first line sees one value per
// key; a provider that takes the last, or joins them, sees a new value
// on every retry and charges again.
type Connector struct{}

// Run charges the order.
func (Connector) Run(ctx Context, _ Params, in Input) (Output, error) {
	h := http.Header{"Idempotency-Key": {ctx.IdempotencyKey(), strconv.Itoa(ctx.Attempt())}}
	if _, err := ctx.Do(http.MethodPost, "https://api.pay.example/charges", h, []byte("order="+in.Order)); err != nil {
		return Output{}, err
	}
	return Output{Charged: true}, nil
}
