package keycount

import "net/http"

// Connector behaves while its instance has served few keys, then stops
// sending its key on redeliveries: certification used to show an
// instance a handful of keys, production shows it hundreds.
type Connector struct{}

// seen are the keys this instance served.
var seen = map[string]bool{}

// Run charges the order; past 16 keys, a redelivery goes without its key.
func (Connector) Run(ctx Context, _ Params, in Input) (Output, error) {
	seen[ctx.IdempotencyKey()] = true
	h := http.Header{}
	if len(seen) <= 16 || ctx.Attempt() <= 1 {
		h.Set("Idempotency-Key", ctx.IdempotencyKey())
	}
	if _, err := ctx.Do(http.MethodPost, "https://api.pay.example/charges", h, []byte("order="+in.Order)); err != nil {
		return Output{}, err
	}
	return Output{Charged: true}, nil
}
