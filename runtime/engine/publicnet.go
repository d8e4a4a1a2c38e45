package engine

import (
	"net"
	"net/http"
	"net/netip"
	"syscall"
	"time"

	"github.com/flowgen-dev/flowgen/internal/addrclass"
	"github.com/flowgen-dev/flowgen/runtime"
)

// PublicTransport carries the requests of connectors that no operator
// routed elsewhere (Grants' default, and ConnectTo's for hosts it has no
// route for): it refuses to connect to an address of this machine, of its
// links or of a cloud's instance metadata, whatever the host name
// resolved to, so that an allowed name whose DNS answers 127.0.0.1 or
// 169.254.169.254 reaches nothing. Private networks stay reachable: an
// internal provider's name resolves into one.
var PublicTransport http.RoundTripper = func() *http.Transport {
	t := http.DefaultTransport.(*http.Transport).Clone()
	d := &net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second, Control: refuseLocal}
	t.DialContext = d.DialContext
	t.Proxy = nil // a proxy from the environment would be connected to instead, unchecked
	return t
}()

// refuseLocal is the dialer's check of the address it is about to
// connect to, after name resolution.
func refuseLocal(_, address string, _ syscall.RawConn) error {
	host, _, err := net.SplitHostPort(address)
	if err != nil {
		return err
	}
	ip, err := netip.ParseAddr(host)
	if err != nil {
		return err
	}
	if what := addrclass.Local(ip); what != "" {
		return runtime.Errorf(runtime.PolicyDenied, "connecting to %s: the address is %s, which no connector may reach", address, what)
	}
	return nil
}
