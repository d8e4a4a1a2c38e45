package initpoll

// Connector never gets to run.
type Connector struct{}

func init() { hang() }

// Run returns nothing.
func (Connector) Run(_ Context, _ Params, _ Input) (Output, error) {
	r := "started"
	return Output{Result: &r}, nil
}
