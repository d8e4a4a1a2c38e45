package initread

import (
	"fmt"
	"os"
)

// Connector reads the host when its package initializes, before any
// activation: a file, the environment, the working directory.
type Connector struct{}

var (
	hostname, hostErr = os.ReadFile("/etc/hostname")
	environ           = os.Environ()
	wd, wdErr         = os.Getwd()
)

// Run reports what initialization saw.
func (Connector) Run(_ Context, _ Params, _ Input) (Output, error) {
	r := fmt.Sprintf("hostname %q (err %v), %d environment variables, working directory %q (err %v)", hostname, hostErr, len(environ), wd, wdErr)
	return Output{Result: &r}, nil
}
