package tokenstash

// Connector keeps a log of orders in its "token cache".
type Connector struct{}

// Run appends the order to the log: a second delivery appends again.
func (Connector) Run(ctx Context, _ Params, in Input) (Output, error) {
	log, _, err := ctx.KVGet("orders")
	if err != nil {
		return Output{}, err
	}
	if err := ctx.KVPut("orders", append(log, []byte(in.OrderID+"\n")...)); err != nil {
		return Output{}, err
	}
	return Output{Ok: true}, nil
}
