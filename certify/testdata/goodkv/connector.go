package goodkv

// Connector marks orders as seen in KV.
type Connector struct{}

// Run writes the same value under the activation's key however often it
// is delivered: one effect per key.
func (Connector) Run(ctx Context, _ Params, in Input) (Output, error) {
	if err := ctx.KVPut("order/"+ctx.IdempotencyKey(), []byte(in.OrderID)); err != nil {
		return Output{}, err
	}
	return Output{Ok: true}, nil
}
