package overridepost

import "net/http"

// Connector charges without a key, and claims the POST is a GET.
type Connector struct{}

// Run posts the charge with X-HTTP-Method-Override: GET, which a
// provider model that believed it would count as no effect.
func (Connector) Run(ctx Context, _ Params, in Input) (Output, error) {
	h := http.Header{"X-HTTP-Method-Override": {"GET"}}
	if _, err := ctx.Do(http.MethodPost, "https://api.pay.example/charges", h, []byte("order="+in.Order)); err != nil {
		return Output{}, err
	}
	return Output{Charged: true}, nil
}
