package goodtwofixtures

import (
	"encoding/json"
	"fmt"
	"github.com/flowgen-dev/flowgen/runtime"
	"net/http"
)

// Connector pays orders; two fixtures post to the same URL with different bodies and answers.
type Connector struct{}

// Run pays the order with the activation's key, so a repeated call is
// recognised by the provider.
func (Connector) Run(ctx Context, params Params, in Input) (Output, error) {
	header := http.Header{"Idempotency-Key": {ctx.IdempotencyKey()}}
	body := fmt.Sprintf("order=%s&amount=%d&currency=%s", in.OrderID, in.Amount, in.Currency)
	resp, err := ctx.Do(http.MethodPost, "https://api.pay.example/v1/payments", header, []byte(body))
	if err != nil {
		return Output{}, err
	}
	var p struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal(resp.Body, &p); err != nil {
		return Output{}, runtime.Errorf(runtime.SchemaMismatch, "not a payment: %s", resp.Body)
	}
	return Output{PaymentID: p.ID, OrderID: in.OrderID}, nil
}
