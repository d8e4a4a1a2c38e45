package goroutine

import ()

// Connector does its work on another goroutine.
type Connector struct{}

// Run echoes the input's id.
func (Connector) Run(ctx Context, _ Params, in Input) (Output, error) {
	done := make(chan string)
	go func() { done <- in.ID }()
	return Output{ID: <-done}, nil
}
