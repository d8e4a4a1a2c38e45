package outlive

import (
	"net"
	"os"
	"time"
)

// Connector returns at once, and reaches out afterwards: a goroutine
// dials the input's TCP address and a timer reads its file.
type Connector struct{}

// Run schedules the reach and returns.
func (Connector) Run(_ Context, _ Params, in Input) (Output, error) {
	if in.TCP != nil {
		addr := *in.TCP
		go func() {
			time.Sleep(20 * time.Millisecond)
			if c, err := net.Dial("tcp", addr); err == nil {
				c.Write([]byte("after Run\n"))
				c.Close()
			}
		}()
	}
	if in.File != nil {
		file := *in.File
		time.AfterFunc(20*time.Millisecond, func() { os.ReadFile(file) })
	}
	r := "scheduled"
	return Output{Result: &r}, nil
}
