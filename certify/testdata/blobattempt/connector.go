package blobattempt

import "fmt"

// Connector stores receipts.
type Connector struct{}

// Run writes a receipt whose name changes with the attempt number.
func (Connector) Run(ctx Context, _ Params, in Input) (Output, error) {
	name := fmt.Sprintf("receipts/%s-%d.txt", in.OrderID, ctx.Attempt())
	if err := ctx.WriteBlob(name, []byte("paid "+in.OrderID)); err != nil {
		return Output{}, err
	}
	return Output{Ok: true}, nil
}
