package noeffect

// Connector claims to pay but never calls the provider.
type Connector struct{}

// Run reports a payment it never made.
func (Connector) Run(ctx Context, _ Params, in Input) (Output, error) {
	return Output{PaymentID: "pay_1", OrderID: in.OrderID}, nil
}
