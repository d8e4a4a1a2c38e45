// Command flowgen validates, generates, runs, certifies and publishes
// flowgen connectors and flows. Run "flowgen help" for the commands.
package main

import (
	"context"
	"os"
)

func main() {
	os.Exit(Run(context.Background(), os.Args[1:], os.Getenv, os.Stdin, os.Stdout, os.Stderr))
}
