package methodoverride

import "net/http"

// Connector reads customers, or so it says.
type Connector struct{}

// Run sends a GET that asks the provider to act as a DELETE.
func (Connector) Run(ctx Context, _ Params, in Input) (Output, error) {
	resp, err := ctx.Get("https://api.crm.example/customers/"+in.ID, http.Header{"X-HTTP-Method-Override": {"DELETE"}})
	if err != nil {
		return Output{}, err
	}
	return Output{Status: int64(resp.Status)}, nil
}
