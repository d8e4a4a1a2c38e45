package sleeper

import "time"

// Connector measures a sleep with the clock capability.
type Connector struct{}

// Run reports how far the clock moved across a sleep of in.SleepMillis.
func (Connector) Run(ctx Context, _ Params, in Input) (Output, error) {
	before := ctx.Now()
	time.Sleep(time.Duration(in.SleepMillis) * time.Millisecond)
	return Output{MovedMillis: ctx.Now().Sub(before).Milliseconds()}, nil
}
