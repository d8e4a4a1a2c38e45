package engine

import (
	"context"
	"log/slog"
	"time"

	"github.com/flowgen-dev/flowgen/runtime/internal/maintenance"
	"github.com/flowgen-dev/flowgen/runtime/runtype"
	"github.com/flowgen-dev/flowgen/runtime/store"
)

// Defaults of the retention options.
const (
	defaultRetention  = 7 * 24 * time.Hour
	defaultSweepEvery = time.Minute
	defaultSweepBatch = 500
)

// retention is how long a finished job of c is kept; not positive: for
// good.
func (pw *protocolWriter) retention(c *compiled) time.Duration {
	if c != nil && c.Retention > 0 {
		return c.Retention
	}
	return pw.opts.Retention
}

// newSweeper is the retention sweeper of s under opts, run by Run and
// Sweep (maintenance.Sweeper).
func newSweeper(s store.Store, opts *Options, log *slog.Logger, m metrics, hook *crashHook) *maintenance.Sweeper {
	return &maintenance.Sweeper{
		Store: s, Owner: opts.Owner, LeaseTTL: opts.LeaseTTL,
		Retention: opts.Retention, Visibility: opts.Visibility,
		Batch: opts.SweepBatch, Every: opts.SweepEvery,
		Now: opts.Now, After: opts.After, Crash: hook.crash, Log: log, Metrics: m,
	}
}

// Sweep deletes, in bounded commits, what retention lets go of by now
// (maintenance.Sweeper.Sweep).
func (e *Engine) Sweep(ctx context.Context) (runtype.Swept, error) {
	return e.sweeper.Sweep(ctx)
}
