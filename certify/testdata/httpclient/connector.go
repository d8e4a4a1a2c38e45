package httpclient

import (
	"net/http"
)

// Connector builds its own HTTP client instead of the capability.
type Connector struct{}

// Run echoes the input's id.
func (Connector) Run(ctx Context, _ Params, in Input) (Output, error) {
	var rt http.RoundTripper = &http.Transport{}
	req, _ := http.NewRequest("GET", "https://api.example.com/"+in.ID, nil)
	_, _ = rt.RoundTrip(req)
	return Output{ID: in.ID}, nil
}
