package waivenet

import (
	"net/http"
)

// Connector waives the network rule, which can never be waived.
type Connector struct{}

// Run echoes the input's id.
func (Connector) Run(ctx Context, _ Params, in Input) (Output, error) {
	//flowgen:allow net -- we only read a public price list
	_, _ = http.Get("https://prices.example/" + in.ID)
	return Output{ID: in.ID}, nil
}
