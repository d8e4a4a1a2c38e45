package runtime

import (
	"time"

	"context"
	"encoding/json"

	"github.com/flowgen-dev/flowgen/flowtype"
	"github.com/flowgen-dev/flowgen/runtime/internal/engine"
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

// engineFlow is f as the engine runs it: each Runner adapted into a Task
// whose calls get a Context with the capabilities grant gives the node.
func (f *Flow) engineFlow(grant func(NodeInfo) Capabilities) *engine.Flow {
	task := func(r Runner) engine.Task {
		if r == nil {
			return nil
		}
		return runnerTask{r, grant}
	}
	ef := &engine.Flow{Name: f.Name, Version: f.Version, Edges: f.Edges, Budget: f.Budget, OnCompensationFailure: f.OnCompensationFailure, Retention: f.Retention}
	for _, n := range f.Nodes {
		en := &engine.Node{Alias: n.Alias, Task: task(n.Runner), Params: n.Params,
			Switch: n.Switch, ForEach: n.ForEach, Subflow: n.Subflow, Checkpoint: n.Checkpoint, Sleep: n.Sleep}
		if n.Compensate != nil {
			en.Compensate = &engine.Compensation{Task: task(n.Compensate.Runner), UndoKey: n.Compensate.UndoKey}
		}
		ef.Nodes = append(ef.Nodes, en)
	}
	return ef
}

// runnerTask adapts a Runner to the engine: each call runs the node with a
// Context carrying the activation's key, attempt, heartbeat and the
// capabilities granted to the node's declaration.
type runnerTask struct {
	runner Runner
	grant  func(NodeInfo) Capabilities
}

func (r runnerTask) Info() NodeInfo { return r.runner.Info() }

func (r runnerTask) Call(ctx context.Context, c engine.Call) (json.RawMessage, error) {
	var caps Capabilities
	if r.grant != nil {
		caps = r.grant(c.Info)
	}
	rc := NewContext(ctx, c.Key, c.Attempt, caps)
	rc.heartbeat = c.Heartbeat
	return r.runner.Run(rc, c.Params, c.Input)
}
