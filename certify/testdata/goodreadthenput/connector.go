package goodreadthenput

import (
	"encoding/json"
	"net/http"
)

// Connector sets tiers.
type Connector struct{}

type account struct {
	Tier string `json:"tier"`
}

// Run writes the tier only when it differs: the write is a function of
// the input alone, so a redelivery that reads its own write writes
// nothing.
func (Connector) Run(ctx Context, _ Params, in Input) (Output, error) {
	url := "https://api.loyalty.example/accounts/" + in.Account
	resp, err := ctx.Do(http.MethodGet, url, nil, nil)
	if err != nil {
		return Output{}, err
	}
	var a account
	if err := json.Unmarshal(resp.Body, &a); err != nil {
		return Output{}, err
	}
	if a.Tier != string(in.Tier) {
		body, _ := json.Marshal(account{Tier: string(in.Tier)})
		if _, err := ctx.Do(http.MethodPut, url, http.Header{"Content-Type": {"application/json"}}, body); err != nil {
			return Output{}, err
		}
	}
	return Output{Tier: string(in.Tier)}, nil
}
