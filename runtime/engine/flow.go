package engine

import (
	"context"
	"encoding/json"

	"github.com/flowgen-dev/flowgen/runtime"
	core "github.com/flowgen-dev/flowgen/runtime/internal/engine"
)

// engineFlow is f as the engine runs it: each Runner adapted into a Task
// whose calls get a Context with the capabilities grant gives the node.
func engineFlow(f *runtime.Flow, grant func(runtime.NodeInfo) runtime.Capabilities) *core.Flow {
	task := func(r runtime.Runner) core.Task {
		if r == nil {
			return nil
		}
		return runnerTask{r, grant}
	}
	ef := &core.Flow{Name: f.Name, Version: f.Version, Edges: f.Edges, Budget: f.Budget, OnCompensationFailure: f.OnCompensationFailure, Retention: f.Retention}
	for _, n := range f.Nodes {
		en := &core.Node{Alias: n.Alias, Task: task(n.Runner), Params: n.Params,
			Switch: n.Switch, ForEach: n.ForEach, Subflow: n.Subflow, Checkpoint: n.Checkpoint, Sleep: n.Sleep}
		if n.Compensate != nil {
			en.Compensate = &core.Compensation{Task: task(n.Compensate.Runner), UndoKey: n.Compensate.UndoKey}
		}
		ef.Nodes = append(ef.Nodes, en)
	}
	return ef
}

// runnerTask adapts a Runner to the engine: each call runs the node with a
// Context carrying the activation's key, attempt, heartbeat and the
// capabilities granted to the node's declaration.
type runnerTask struct {
	runner runtime.Runner
	grant  func(runtime.NodeInfo) runtime.Capabilities
}

func (r runnerTask) Info() runtime.NodeInfo { return r.runner.Info() }

func (r runnerTask) Call(ctx context.Context, c core.Call) (json.RawMessage, error) {
	var caps runtime.Capabilities
	if r.grant != nil {
		caps = r.grant(c.Info)
	}
	var heartbeat runtime.HeartbeatCounter
	if c.Heartbeat != nil {
		heartbeat = c.Heartbeat
	}
	rc := runtime.NewActivationContext(ctx, c.Key, c.Attempt, caps, heartbeat, c.At)
	return r.runner.Run(rc, c.Params, c.Input)
}
