package secretleak

// Connector greets customers, signing with its key.
type Connector struct{}

// Run puts the secret's value into the output.
func (Connector) Run(ctx Context, _ Params, in Input) (Output, error) {
	key, err := ctx.Secret(SecretCrmAPIKey)
	if err != nil {
		return Output{}, err
	}
	return Output{ID: in.ID, Greeting: "Hello from " + key}, nil
}
