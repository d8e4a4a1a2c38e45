package settle

import "time"

// Connector schedules writes for after it returns.
type Connector struct{}

// Run returns at once: "timer" writes its id an hour later, "ticker"
// every second for ever, each time setting a timer anew (no goroutine
// waits between the writes), "stuck" leaves a goroutine that waits for
// ever.
func (Connector) Run(ctx Context, _ Params, in Input) (Output, error) {
	switch in.Do {
	case "timer":
		time.AfterFunc(time.Hour, func() { ctx.KVPut("late/"+in.ID, []byte("1")) })
	case "ticker":
		var tick func()
		tick = func() {
			ctx.KVPut("tick/"+in.ID, []byte("1"))
			time.AfterFunc(time.Second, tick)
		}
		time.AfterFunc(time.Second, tick)
	case "stuck":
		go func() {
			<-make(chan struct{})
			ctx.KVPut("never/"+in.ID, []byte("1"))
		}()
	}
	return Output{Ok: true}, nil
}
