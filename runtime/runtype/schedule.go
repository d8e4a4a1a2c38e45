package runtype

import (
	"encoding/json"
	"time"
)

// Schedule starts a job of Flow with Input at every tick of a cron
// expression. Every tick's job is started under a job key made of the
// schedule's name and the tick's time, so of the workers that see a tick
// come due, one starts its job and none starts a second.
type Schedule struct {
	// Name identifies the schedule in the store; its state (the last tick
	// handled, ticks buffered) is kept under it.
	Name string
	// Flow is the flow to start: a name (its newest version) or
	// name@version.
	Flow string
	// Cron is a standard five-field cron expression ("*/5 * * * *") or a
	// descriptor (@hourly, @daily, @every 90s), in UTC.
	Cron  string
	Input json.RawMessage
	// Overlap says what a tick does while the job of the tick before is
	// still running; the zero value is OverlapSkip.
	Overlap Overlap
	// CatchUp bounds how far back ticks missed while no worker ran are
	// started (zero: one hour). Older ticks are dropped.
	CatchUp time.Duration
}

// Overlap is a schedule's policy for a tick that comes while the job of
// the tick before still runs.
type Overlap string

// The overlap policies.
const (
	// OverlapSkip drops the tick.
	OverlapSkip Overlap = "skip"
	// OverlapBuffer keeps the tick and starts its job when the running one
	// finishes, tick by tick, in order.
	OverlapBuffer Overlap = "buffer"
	// OverlapAllow starts the tick's job anyway.
	OverlapAllow Overlap = "allow"
)
