package readmodifywrite

import (
	"encoding/json"
	"net/http"
)

// Connector credits points.
type Connector struct{}

type account struct {
	Balance int `json:"balance"`
}

// Run reads the balance and writes it back with the points added: a PUT,
// which looks idempotent, of a body that grows with every delivery.
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
	a.Balance += int(in.Points)
	body, _ := json.Marshal(a)
	if _, err := ctx.Do(http.MethodPut, url, http.Header{"Content-Type": {"application/json"}}, body); err != nil {
		return Output{}, err
	}
	return Output{Balance: int64(a.Balance)}, nil
}
