package initsleep

import "time"

// Connector never gets to run.
type Connector struct{}

func init() {
	time.Sleep(100 * 365 * 24 * time.Hour)
}

// Run returns nothing.
func (Connector) Run(_ Context, _ Params, _ Input) (Output, error) {
	r := "started"
	return Output{Result: &r}, nil
}
