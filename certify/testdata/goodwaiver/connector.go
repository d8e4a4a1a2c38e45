package goodwaiver

import (
	"crypto/rand"
	"encoding/hex"
	"net/http"
)

// Connector reads customers from a provider that wants a nonce per call.
type Connector struct{}

// Run sends a fresh nonce; it never reaches the output.
func (Connector) Run(ctx Context, _ Params, in Input) (Output, error) {
	b := make([]byte, 8)
	//flowgen:allow rand -- the provider requires a random nonce per request; it never reaches the output
	rand.Read(b)
	resp, err := ctx.Get("https://api.crm.example/customers/"+in.ID, http.Header{"X-Nonce": {hex.EncodeToString(b)}})
	if err != nil {
		return Output{}, err
	}
	return Output{Status: int64(resp.Status)}, nil
}
