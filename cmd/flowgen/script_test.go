package main

import (
	"context"
	"os"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"
)

// TestMain lets the test binary also be the flowgen command, so that
// scripts under testdata/script run "exec flowgen ..." as a user would.
func TestMain(m *testing.M) {
	testscript.Main(m, map[string]func(){
		"flowgen": func() { os.Exit(Run(context.Background(), os.Args[1:], os.Getenv, os.Stdin, os.Stdout, os.Stderr)) },
	})
}

// TestScripts runs the command-line scripts in testdata/script: what a
// user types, and exactly what they see.
func TestScripts(t *testing.T) {
	t.Parallel()
	testscript.Run(t, testscript.Params{Dir: "testdata/script"})
}
