package pricelist

import (
	"encoding/json"
	"net/http"

	"github.com/flowgen-dev/flowgen/runtime"
)

// Connector reads pinned price lists. It holds no state.
type Connector struct{}

// Run reads the price list only if it still has the pinned ETag (If-Match
// asks the server to refuse otherwise, and the pinned read checks the
// response), so the output is a function of the input.
func (Connector) Run(ctx Context, _ Params, in Input) (Output, error) {
	resp, err := ctx.GetPinned(in.URL, in.Etag, http.Header{"If-Match": {in.Etag}})
	if err != nil {
		return Output{}, err
	}
	var prices map[string]int64
	if err := json.Unmarshal(resp.Body, &prices); err != nil {
		return Output{}, runtime.Errorf(runtime.SchemaMismatch, "price list is not a map of SKU to cents: %v", err)
	}
	return Output{Etag: in.Etag, Prices: prices}, nil
}
