package engine

import (
	"context"
	"time"

	"github.com/flowgen-dev/flowgen/runtime/internal/maintenance"
	"github.com/flowgen-dev/flowgen/runtime/runtype"
)

// Defaults of the retention options.
const (
	defaultRetention  = 7 * 24 * time.Hour
	defaultSweepEvery = time.Minute
	defaultSweepBatch = 500
)

// retention is how long a finished job of c is kept; not positive: for
// good.
func (e *Engine) retention(c *compiled) time.Duration {
	if c != nil && c.Retention > 0 {
		return c.Retention
	}
	return e.opts.Retention
}

// newSweeper is the retention sweeper of e's store, run by Run and Sweep
// (maintenance.Sweeper).
func (e *Engine) newSweeper() *maintenance.Sweeper {
	return &maintenance.Sweeper{
		Store: e.store, Owner: e.opts.Owner, LeaseTTL: e.opts.LeaseTTL,
		Retention: e.opts.Retention, Visibility: e.opts.Visibility,
		Batch: e.opts.SweepBatch, Every: e.opts.SweepEvery,
		Now: e.now, After: e.opts.After, Crash: e.crash, Log: e.log, Metrics: e.metrics,
	}
}

// Sweep deletes, in bounded commits, what retention lets go of by now
// (maintenance.Sweeper.Sweep).
func (e *Engine) Sweep(ctx context.Context) (runtype.Swept, error) {
	return e.sweeper.Sweep(ctx)
}
