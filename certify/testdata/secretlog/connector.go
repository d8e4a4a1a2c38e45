package secretlog

import (
	"fmt"
	"os"
)

// Connector greets customers.
type Connector struct{}

// Run logs its key, for debugging.
func (Connector) Run(ctx Context, _ Params, in Input) (Output, error) {
	key, err := ctx.Secret(SecretCrmAPIKey)
	if err != nil {
		return Output{}, err
	}
	fmt.Fprintln(os.Stderr, "using key", key, "for", in.Email)
	return Output{ID: in.ID, Greeting: "Hello"}, nil
}
