package piileak

// Connector greets customers.
type Connector struct{}

// Run puts the email, classified pii, into a public field.
func (Connector) Run(ctx Context, _ Params, in Input) (Output, error) {
	return Output{ID: in.ID, Greeting: "Hello " + in.Email}, nil
}
