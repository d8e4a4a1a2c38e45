package productlookup

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"

	"github.com/flowgen-dev/flowgen/runtime"
)

// Connector looks products up. It holds no state.
type Connector struct{}

// Run fetches the product for the line's SKU.
func (Connector) Run(ctx Context, params Params, in Input) (Output, error) {
	token, err := ctx.Secret(SecretShopCatalogToken)
	if err != nil {
		return Output{}, err
	}
	endpoint := strings.TrimSuffix(*params.BaseURL, "/") + "/products/" + url.PathEscape(in.SKU)
	resp, err := ctx.Get(endpoint, http.Header{"Authorization": {"Bearer " + token}, "Accept": {"application/json"}})
	if err != nil {
		return Output{}, err
	}
	var p struct {
		SKU   string `json:"sku"`
		Name  string `json:"name"`
		Price struct {
			Cents int64 `json:"cents"`
		} `json:"price"`
		Stock int64 `json:"stock"`
	}
	if err := json.Unmarshal(resp.Body, &p); err != nil || p.SKU == "" {
		return Output{}, runtime.Errorf(runtime.SchemaMismatch, "catalogue response is not a product: %s", resp.Body)
	}
	return Output{SKU: p.SKU, Name: p.Name, PriceCents: p.Price.Cents, InStock: p.Stock}, nil
}
