// Package usesexec starts a process.
package usesexec

import "os/exec"

// Run runs true.
func Run() error { return exec.Command("true").Run() }
