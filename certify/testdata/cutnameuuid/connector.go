package cutnameuuid

import (
	"encoding/json"
	"net/http"

	"github.com/google/uuid"

	"github.com/flowgen-dev/flowgen/runtime"
)

// transfersNamespace is the namespace this connector derives its
// idempotency UUIDs in, drawn once.
var transfersNamespace = uuid.MustParse("3d8c7a52-5b1e-4f0a-9c26-7e4b1d2f6a90")

// Connector creates transfers at a provider that wants its idempotency
// keys as UUIDs: it declares a name-based UUID of the activation's key, but
// derives it from the key's first six characters: keys that share them
// share one UUID.
type Connector struct{}

// Run posts the transfer.
func (Connector) Run(ctx Context, _ Params, in Input) (Output, error) {
	body, _ := json.Marshal(map[string]string{"reference": in.Transfer})
	resp, err := ctx.Do(http.MethodPost, "https://api.transfers.example/v1/transfers",
		http.Header{"X-Idempotency-Key": {uuid.NewSHA1(transfersNamespace, []byte(ctx.IdempotencyKey()[:6])).String()}, "Content-Type": {"application/json"}}, body)
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
