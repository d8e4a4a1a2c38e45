package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"github.com/flowgen-dev/flowgen/flowtype"
	"github.com/flowgen-dev/flowgen/runtime/runtype"
)

// Task is the code of a task node as the engine runs it. Package runtime
// adapts a node's Runner into one, giving it its Context and the
// capabilities its spec declares; the engine sees only this seam.
type Task interface {
	// Info is the node's declaration: key fields, retries, timeout.
	Info() runtype.NodeInfo
	// Call runs the node once; ctx carries the attempt's deadline.
	Call(ctx context.Context, c Call) (json.RawMessage, error)
}

// Call is one attempt of a task node.
type Call struct {
	// Info is the task's declaration as this activation uses it (a
	// compensation's key fields are its UndoKey).
	Info runtype.NodeInfo
	// Key is the activation's idempotency key; empty without key fields.
	Key     string
	Attempt int
	Params  json.RawMessage
	Input   json.RawMessage
	// Heartbeat counts the node's signs of life; the heartbeat watch
	// reads it while the call runs (a node with a heartbeat timeout).
	Heartbeat *atomic.Int64
	// At is the activation's logical time: when it was published, the
	// same on every attempt (runtime.Context.LogicalTime).
	At time.Time
}

// Flow is a flow as the engine runs it: package runtime builds one from
// its public Flow, with each Runner adapted into a Task.
type Flow struct {
	Name string
	// Version is the flow's version (the Flow IR's version); jobs record
	// it, with the content hash, and run on this definition to the end.
	Version string
	Nodes   []*Node
	Edges   []runtype.Edge
	Budget  runtype.Budget
	// OnCompensationFailure is the flow's policy for a compensation that
	// fails (runtype.CompensationFailure); empty is continue.
	OnCompensationFailure runtype.CompensationFailure
	// Retention is how long a finished job is kept; zero is the engine's
	// Options.Retention. It is not part of the content hash: keeping jobs
	// longer or shorter changes no job's course.
	Retention time.Duration
}

// Node is one node of a Flow: exactly one of Task, Switch, ForEach,
// Checkpoint or Subflow (runtime.FlowNode says what each does).
type Node struct {
	Alias      string
	Task       Task
	Params     json.RawMessage
	Switch     *runtype.Switch
	ForEach    *runtype.ForEach
	Compensate *Compensation
	Subflow    *runtype.Subflow
	Checkpoint *runtype.Checkpoint
	Sleep      *runtype.Sleep
}

// Compensation undoes a node's effect: Task receives the node's output,
// keyed by the output's UndoKey fields.
type Compensation struct {
	Task    Task
	UndoKey []string
}

// maxCycleIterations is the most passes a back edge may allow.
const maxCycleIterations = 1_000_000

// compiled is a registered flow with its lookups built once.
type compiled struct {
	*Flow
	// hash is the definition's content hash (contentHash) and key its
	// flow key, name#hash[:16], which every task of its jobs carries.
	hash, key string
	byAlias   map[string]*Node
	out       map[string][]runtype.Edge // by from alias
	entries   []string
	bodies    map[string]bool // aliases run only as forEach bodies
}

// effectsCoverCapabilities fails when a node declares weaker effects
// than a capability it holds implies (an HTTP reader in a node declared
// Pure): the engine runs a node by its declared effects (a Pure node's
// call may run inside a store transaction), so the declaration must be
// at least what its capabilities can do.
func effectsCoverCapabilities(info runtype.NodeInfo) error {
	for _, name := range info.Capabilities {
		c, ok := flowtype.LookupCapability(flowtype.Capability(name))
		if ok && c.Effects > info.Effects {
			return fmt.Errorf("%s holds capability %s, which needs effects %s or stronger, but declares %s", info.ID, name, c.Effects, info.Effects)
		}
	}
	return nil
}

func compile(f *Flow) (*compiled, error) {
	c := &compiled{Flow: f, byAlias: map[string]*Node{}, out: map[string][]runtype.Edge{}, bodies: map[string]bool{}}
	if err := c.addNodes(); err != nil {
		return nil, err
	}
	hasIn := map[string]bool{}
	for _, e := range f.Edges {
		if c.byAlias[e.From] == nil || c.byAlias[e.To] == nil {
			return nil, fmt.Errorf("flow %s: edge %s.%s -> %s names an unknown node", f.Name, e.From, e.FromPort, e.To)
		}
		if e.MaxIterations < 0 || e.MaxIterations > maxCycleIterations {
			return nil, fmt.Errorf("flow %s: edge %s.%s -> %s: MaxIterations %d is outside 0..%d", f.Name, e.From, e.FromPort, e.To, e.MaxIterations, maxCycleIterations)
		}
		c.out[e.From] = append(c.out[e.From], e)
		if e.MaxIterations == 0 {
			hasIn[e.To] = true
		}
	}
	for _, n := range f.Nodes {
		if n.ForEach != nil {
			if c.byAlias[n.ForEach.Do] == nil {
				return nil, fmt.Errorf("flow %s: forEach %q runs unknown node %q", f.Name, n.Alias, n.ForEach.Do)
			}
			c.bodies[n.ForEach.Do] = true
		}
	}
	for _, n := range f.Nodes {
		if !hasIn[n.Alias] && !c.bodies[n.Alias] {
			c.entries = append(c.entries, n.Alias)
		}
	}
	if len(c.entries) == 0 {
		return nil, fmt.Errorf("flow %s: no entry node (every node has an incoming edge)", f.Name)
	}
	switch f.OnCompensationFailure {
	case "", runtype.CompensateContinue, runtype.CompensateHalt, runtype.CompensateRetry, runtype.CompensatePark:
	default:
		return nil, fmt.Errorf("flow %s: compensation failure policy %q: want continue, halt, retry or park", f.Name, f.OnCompensationFailure)
	}
	if strings.ContainsAny(f.Name, flowKeySep+"@") {
		return nil, fmt.Errorf("flow %q: a flow name may not contain %q or %q", f.Name, flowKeySep, "@")
	}
	var err error
	if c.hash, err = contentHash(f); err != nil {
		return nil, err
	}
	c.key = f.Name + flowKeySep + c.hash[:16]
	return c, nil
}

// addNodes checks f's nodes one by one and indexes them by alias.
func (c *compiled) addNodes() error {
	f := c.Flow
	for _, n := range f.Nodes {
		kinds := 0
		for _, set := range []bool{n.Task != nil, n.Switch != nil, n.ForEach != nil, n.Checkpoint != nil, n.Subflow != nil, n.Sleep != nil} {
			if set {
				kinds++
			}
		}
		if kinds != 1 {
			return fmt.Errorf("flow %s: node %q must have exactly one of Runner, Switch, ForEach, Checkpoint, Subflow, Sleep", f.Name, n.Alias)
		}
		if s := n.Sleep; s != nil && (s.For > 0) == (s.Until != "") || n.Sleep != nil && n.Sleep.For < 0 {
			return fmt.Errorf("flow %s: sleep %q needs exactly one of a positive For and an Until field", f.Name, n.Alias)
		}
		if _, dup := c.byAlias[n.Alias]; dup {
			return fmt.Errorf("flow %s: duplicate alias %q", f.Name, n.Alias)
		}
		if n.Task != nil {
			if err := effectsCoverCapabilities(n.Task.Info()); err != nil {
				return fmt.Errorf("flow %s: node %q: %w", f.Name, n.Alias, err)
			}
		}
		c.byAlias[n.Alias] = n
	}
	return nil
}
