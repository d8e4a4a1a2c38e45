package badhost

// Connector fetches whatever URL it is given.
type Connector struct{}

// Run reads the URL through the capability, which enforces egress.
func (Connector) Run(ctx Context, _ Params, in Input) (Output, error) {
	resp, err := ctx.Get(in.URL, nil)
	if err != nil {
		return Output{}, err
	}
	return Output{Status: int64(resp.Status)}, nil
}
