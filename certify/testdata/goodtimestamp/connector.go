package goodtimestamp

import "time"

// Connector stamps events.
type Connector struct{}

// Run stamps the event with the clock capability's time: production's
// real clock, so a redelivery may stamp another time (the spec declares
// BestEffort, and the engine keeps the output it committed first).
func (Connector) Run(ctx Context, _ Params, in Input) (Output, error) {
	now := ctx.Now().UTC()
	return Output{Event: in.Event, At: now.Format(time.RFC3339), Day: now.Format(time.DateOnly), Epoch: now.Unix()}, nil
}
