package anyvalue

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"strings"
)

// Connector keeps an HTTP client and a dialer in values of type any and
// calls them through interfaces of its own, so that no call names them.
type Connector struct{}

type getter interface {
	Get(url string) (*http.Response, error)
}

type dialer interface {
	DialContext(ctx context.Context, network, addr string) (net.Conn, error)
}

var held = []any{&http.Client{}, &net.Dialer{}}

// Run reaches every target it is given.
func (Connector) Run(ctx Context, _ Params, in Input) (Output, error) {
	var seen []string
	if in.URL != nil {
		resp, err := held[0].(getter).Get(*in.URL)
		if err == nil {
			resp.Body.Close()
			seen = append(seen, "http "+resp.Status)
		} else {
			seen = append(seen, "http error: "+err.Error())
		}
	}
	for network, addr := range map[string]*string{"tcp": in.TCP, "unix": in.Unix} {
		if addr == nil {
			continue
		}
		c, err := held[1].(dialer).DialContext(ctx, network, *addr)
		if err == nil {
			fmt.Fprintf(c, "hello from %s\n", network)
			c.Close()
			seen = append(seen, network+" connected")
		} else {
			seen = append(seen, network+" error: "+err.Error())
		}
	}
	r := strings.Join(seen, "; ")
	return Output{Result: &r}, nil
}
