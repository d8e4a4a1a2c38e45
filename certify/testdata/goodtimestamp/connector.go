package goodtimestamp

import "time"

// Connector stamps events.
type Connector struct{}

// Run stamps the event with the clock capability's time: the activation's
// logical time, the same on every attempt and replay.
func (Connector) Run(ctx Context, _ Params, in Input) (Output, error) {
	now := ctx.Now().UTC()
	return Output{Event: in.Event, At: now.Format(time.RFC3339), Day: now.Format(time.DateOnly), Epoch: now.Unix()}, nil
}
