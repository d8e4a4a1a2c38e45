package runtime

import (
	"encoding/json"
	"time"

	"github.com/flowgen-dev/flowgen/flowtype"
)

// Flow is a flow as the engine runs it. Generated code builds one from the
// Flow IR with typed wiring; tests build them by hand.
type Flow struct {
	Name string
	// Version is the flow's version (the Flow IR's version). A job runs to
	// its end on the definition it started on: register a changed flow
	// under a new version, beside the old one (docs/runtime.md, "Changing
	// a flow").
	Version string
	Nodes   []*FlowNode
	Edges   []Edge
	// Budget bounds each job of the flow started with Engine.Start; a job
	// started as a subflow gets Subflow.Budget within its parent's.
	Budget Budget
	// OnCompensationFailure says what a failed job's compensation chain
	// does when a compensation fails: continue (the default), halt or
	// retry (CompensationFailure).
	OnCompensationFailure CompensationFailure
	// Retention is how long a finished job of the flow is kept before the
	// sweeper deletes it; zero is the engine's Options.Retention.
	Retention time.Duration
	// Schedules start jobs of the flow (its newest version) by cron
	// ticks; Register adds them to the engine (Engine.AddSchedule), their
	// Flow set to the flow's name.
	Schedules []Schedule
}

// FlowNode is one node of a flow: exactly one of Runner, Switch, ForEach,
// Checkpoint or Subflow.
type FlowNode struct {
	Alias  string
	Runner Runner
	Params json.RawMessage
	// Switch routes its input unchanged to the edges leaving the port
	// named after the first matching case's label.
	Switch *Switch
	// ForEach runs the node Do once per element of the input's Items
	// array and sends the array of their outputs, in element order, on its
	// "out" port.
	ForEach *ForEach
	// Compensate undoes this node's effect when a later step of the job
	// fails; compensations run one at a time, newest first.
	Compensate *Compensation
	// Subflow runs another registered flow as this node.
	Subflow *Subflow
	// Checkpoint parks the job's branch until a human decides (Signal);
	// the input leaves unchanged on port "approved" or "rejected".
	Checkpoint *Checkpoint
	// Sleep parks the activation, holding no worker, until its time comes
	// (a duration, or a time in the input); the input leaves unchanged on
	// "out". The timer survives restarts: it is the store's visibility of
	// the message that wakes it.
	Sleep *Sleep
}

// Compensation is how a node's effect is undone: Runner receives the
// node's output, and its idempotency key is computed from the output's
// UndoKey fields, so a repeated undo is recognised by the other side.
type Compensation struct {
	Runner  Runner
	UndoKey []string
}

// Delivery is an edge's delivery guarantee.
type Delivery = flowtype.Delivery

// The delivery guarantees.
const (
	AtLeastOnce = flowtype.AtLeastOnce
	AtMostOnce  = flowtype.AtMostOnce
	ExactlyOnce = flowtype.ExactlyOnce
)
