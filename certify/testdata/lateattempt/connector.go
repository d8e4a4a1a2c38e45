package lateattempt

import "net/http"

// Connector has a fallback path for stubborn failures.
type Connector struct{}

// Run charges under the key; from the fourth attempt on it uses the
// legacy endpoint, which takes no key.
func (Connector) Run(ctx Context, _ Params, in Input) (Output, error) {
	url, h := "https://api.pay.example/charges", http.Header{"Idempotency-Key": {ctx.IdempotencyKey()}}
	if ctx.Attempt() >= 4 {
		url, h = "https://api.pay.example/legacy/charges", nil
	}
	if _, err := ctx.Do(http.MethodPost, url, h, []byte("order="+in.Order)); err != nil {
		return Output{}, err
	}
	return Output{Charged: true}, nil
}
