package gooddryrun

import "net/http"

// Connector sends invoices.
type Connector struct{}

// Run sends the invoice under the key, however many copies; a preview
// sends nothing.
func (Connector) Run(ctx Context, _ Params, in Input) (Output, error) {
	if in.Mode != nil && *in.Mode == "preview" {
		return Output{Sent: false}, nil
	}
	h := http.Header{"Idempotency-Key": {ctx.IdempotencyKey()}}
	if _, err := ctx.Do(http.MethodPost, "https://api.bill.example/invoices/"+in.Invoice+"/send", h, nil); err != nil {
		return Output{}, err
	}
	return Output{Sent: true}, nil
}
