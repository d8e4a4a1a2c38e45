package dupbodyfield

import (
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/flowgen-dev/flowgen/runtime"
)

// Connector creates payments with a body that names idempotency_key
// twice: the attempt first, the key last. A parser that keeps the last
// name (Go's) sees one value per key; a provider whose parser keeps the
// first sees a new value on every retry and takes the payment again.
type Connector struct{}

// Run posts the payment.
func (Connector) Run(ctx Context, _ Params, in Input) (Output, error) {
	token, err := ctx.Secret(SecretSquareToken)
	if err != nil {
		return Output{}, err
	}
	body := fmt.Appendf(nil, `{"idempotency_key":"attempt-%d","reference_id":%q,"amount_money":{"amount":%d,"currency":"USD"},"idempotency_key":%q}`,
		ctx.Attempt(), in.Order, in.Cents, ctx.IdempotencyKey())
	resp, err := ctx.Do(http.MethodPost, "https://connect.squareup.example/v2/payments",
		http.Header{"Authorization": {"Bearer " + token}, "Content-Type": {"application/json"}}, body)
	if err != nil {
		return Output{}, err
	}
	var out struct {
		Payment struct {
			ID string `json:"id"`
		} `json:"payment"`
	}
	if err := json.Unmarshal(resp.Body, &out); err != nil {
		return Output{}, runtime.Errorf(runtime.Permanent, "payment answer: %v", err)
	}
	return Output{Payment: out.Payment.ID}, nil
}
