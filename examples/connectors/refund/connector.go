package refund

import (
	"encoding/json"
	"net/http"
	"net/url"

	"github.com/flowgen-dev/flowgen/runtime"
)

// Endpoint is the provider's refunds API.
const Endpoint = "https://api.stripe.com/v1/refunds"

// Connector refunds charges. It holds no state.
type Connector struct{}

// Run refunds the whole charge, keyed by the activation's idempotency key so
// that a compensation run twice refunds once.
func (Connector) Run(ctx Context, _ Params, in Input) (Output, error) {
	key, err := ctx.Secret(SecretStripeRefundKey)
	if err != nil {
		return Output{}, err
	}
	header := http.Header{
		"Idempotency-Key": {ctx.IdempotencyKey()},
		"Content-Type":    {"application/x-www-form-urlencoded"},
		"Authorization":   {"Bearer " + key},
	}
	resp, err := ctx.Do(http.MethodPost, Endpoint, header, []byte("charge="+url.QueryEscape(in.ChargeID)))
	if err != nil {
		return Output{}, err
	}
	var r struct {
		ID     string `json:"id"`
		Charge string `json:"charge"`
		Status string `json:"status"`
	}
	if err := json.Unmarshal(resp.Body, &r); err != nil || r.ID == "" {
		return Output{}, runtime.Errorf(runtime.SchemaMismatch, "refund response is not a refund: %s", resp.Body)
	}
	return Output{RefundID: r.ID, ChargeID: r.Charge, Status: OutputStatus(r.Status)}, nil
}
