package goodbodyfield

import (
	"encoding/json"
	"net/http"
	"strings"

	"github.com/flowgen-dev/flowgen/runtime"
)

// Connector creates Square payments.
type Connector struct{}

// Run posts the payment with the activation's key as idempotency_key,
// and checks the token's shape before it sends it.
func (Connector) Run(ctx Context, _ Params, in Input) (Output, error) {
	token, err := ctx.Secret(SecretSquareToken)
	if err != nil {
		return Output{}, err
	}
	if !strings.HasPrefix(token, "EAAA") {
		return Output{}, runtime.Errorf(runtime.Auth, "the Square token is not an access token")
	}
	body, _ := json.Marshal(map[string]any{"idempotency_key": ctx.IdempotencyKey(), "reference_id": in.Order,
		"amount_money": map[string]any{"amount": in.Cents, "currency": "USD"}})
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
