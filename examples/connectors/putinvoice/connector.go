package putinvoice

import (
	"crypto/md5"
	"encoding/hex"
	"fmt"
	"strings"
)

// Connector stores invoices. It holds no state.
type Connector struct{}

// Run renders the order's invoice as text and writes it to
// <bucket>/<prefix><order id>.txt. The ETag is the MD5 of the content, as
// S3 reports for a single-part upload, so a rewrite of the same invoice
// gives the same output.
func (Connector) Run(ctx Context, params Params, in Input) (Output, error) {
	doc := render(in)
	key := *params.Prefix + in.OrderID + ".txt"
	if err := ctx.WriteBlob(params.Bucket+"/"+key, doc); err != nil {
		return Output{}, err
	}
	sum := md5.Sum(doc)
	return Output{OrderID: in.OrderID, Bucket: params.Bucket, Key: key, Etag: `"` + hex.EncodeToString(sum[:]) + `"`}, nil
}

// render is deterministic: the same order gives the same bytes.
func render(in Input) []byte {
	var b strings.Builder
	fmt.Fprintf(&b, "INVOICE %s\ncustomer: %s\n\n", in.OrderID, in.Customer.ID)
	for _, l := range in.Lines {
		fmt.Fprintf(&b, "%-32s x %d\n", l.SKU, l.Qty)
	}
	fmt.Fprintf(&b, "\ntotal: %d.%02d %s (%s)\n", in.TotalCents/100, in.TotalCents%100, in.Currency, in.PaymentMethod)
	return []byte(b.String())
}
