package testutil

import (
	"testing"

	"go.uber.org/goleak"
)

// VerifyNoLeaks runs a package's tests, then fails them if any goroutine
// outlives them. The idle keep-alive connections an HTTP client's
// transport keeps are not leaks; anything else is. Call it as a package's
// TestMain: func TestMain(m *testing.M) { testutil.VerifyNoLeaks(m) }.
func VerifyNoLeaks(m *testing.M) {
	goleak.VerifyTestMain(m,
		goleak.IgnoreAnyFunction("net/http.(*persistConn).readLoop"),
		goleak.IgnoreAnyFunction("net/http.(*persistConn).writeLoop"))
}
