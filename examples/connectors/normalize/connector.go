package normalize

import (
	"strings"

	"github.com/flowgen-dev/flowgen/examples/connectors/schemas"
)

// Connector normalises checkout payloads. It holds no state.
type Connector struct{}

// Run trims and lower-cases the e-mail address, upper-cases SKUs and the
// currency, and merges lines with the same SKU in first-seen order. Totals
// are taken as given.
func (Connector) Run(_ Context, _ Params, in Input) (Output, error) {
	out := Output{
		OrderID:       in.OrderID,
		Customer:      schemas.OrderCustomer{ID: in.CustomerID, Email: strings.ToLower(strings.TrimSpace(in.Email))},
		TotalCents:    in.TotalCents,
		Currency:      schemas.OrderCurrency(strings.ToUpper(in.Currency)),
		PaymentMethod: schemas.OrderPaymentMethod(in.PaymentMethod),
		CardToken:     in.CardToken,
	}
	index := map[string]int{}
	for _, item := range in.Items {
		sku := strings.ToUpper(strings.TrimSpace(item.SKU))
		if i, seen := index[sku]; seen {
			out.Lines[i].Qty += item.Qty
			continue
		}
		index[sku] = len(out.Lines)
		out.Lines = append(out.Lines, schemas.OrderLine{SKU: sku, Qty: item.Qty})
	}
	return out, nil
}
