package gooduuidkey

import (
	"encoding/json"
	"net/http"

	"github.com/flowgen-dev/flowgen/runtime"
)

// Connector creates transfers at a provider that wants its idempotency
// keys as UUIDs: it sends the activation's key in UUID form.
type Connector struct{}

// Run posts the transfer.
func (Connector) Run(ctx Context, _ Params, in Input) (Output, error) {
	body, _ := json.Marshal(map[string]string{"reference": in.Transfer})
	resp, err := ctx.Do(http.MethodPost, "https://api.transfers.example/v1/transfers",
		http.Header{"X-Idempotency-Key": {ctx.IdempotencyUUID()}, "Content-Type": {"application/json"}}, body)
	if err != nil {
		return Output{}, err
	}
	var out struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal(resp.Body, &out); err != nil {
		return Output{}, runtime.Errorf(runtime.Permanent, "transfer answer: %v", err)
	}
	return Output{ID: out.ID}, nil
}
