// Command flowgen validates, generates, runs, certifies and publishes
// flowgen connectors and flows. Run "flowgen help" for the commands.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	// SIGINT or SIGTERM cancels the command's context, so that serve and
	// worker stop their flow program gracefully; a second one kills.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	go func() {
		<-ctx.Done()
		stop()
	}()
	os.Exit(Run(ctx, os.Args[1:], os.Getenv, os.Stdin, os.Stdout, os.Stderr))
}
