package runtime

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// TypedNode is a node whose input and output types are part of its Go
// type, so the Builder can check connections at compile time. Generated
// connector packages return one from NewTypedNode.
type TypedNode[I, O any] struct{ Runner }

// Builder assembles a Flow whose connections the Go compiler checks: an
// edge joins an Out[T] to an In[T] of the same T. Generated flow
// constructors use it; mistakes (unknown or duplicate aliases) are
// collected and returned by Build.
type Builder struct {
	flow  Flow
	nodes map[string]*FlowNode
	errs  []error
}

// NewBuilder starts a flow called name.
func NewBuilder(name string) *Builder {
	return &Builder{flow: Flow{Name: name}, nodes: map[string]*FlowNode{}}
}

// SetVersion sets the flow's version (Flow.Version).
func (b *Builder) SetVersion(version string) { b.flow.Version = version }

// SetCompensationFailure sets the flow's policy for a compensation that
// fails (Flow.OnCompensationFailure).
func (b *Builder) SetCompensationFailure(p CompensationFailure) { b.flow.OnCompensationFailure = p }

// SetRetention sets how long a finished job of the flow is kept
// (Flow.Retention).
func (b *Builder) SetRetention(d time.Duration) { b.flow.Retention = d }

// AddSchedule adds a schedule that starts jobs of the flow
// (Flow.Schedules).
func (b *Builder) AddSchedule(s Schedule) {
	s.Flow = b.flow.Name
	b.flow.Schedules = append(b.flow.Schedules, s)
}

// SetBudget sets the budget of each job of the flow (Flow.Budget).
func (b *Builder) SetBudget(budget Budget) { b.flow.Budget = budget }

// Ref is a node added to a Builder; In and Out are its typed ports.
type Ref[I, O any] struct{ alias string }

// In is the node's input port.
func (r Ref[I, O]) In() In[I] { return In[I](r) }

// Out is the node's output port called port ("out" for connectors, a
// switch label, "approved" or "rejected" for checkpoints).
func (r Ref[I, O]) Out(port string) Out[O] { return Out[O]{r.alias, port} }

// In is a node input that accepts values of type T.
type In[T any] struct{ alias string }

// Out is a node output port that produces values of type T.
type Out[T any] struct{ alias, port string }

// NodeOptions are per-node settings from the flow.
type NodeOptions struct {
	// Params is the node's params as JSON (validated by the node).
	Params json.RawMessage
	// Timeout bounds one attempt, overriding the connector's; zero keeps it.
	Timeout time.Duration
	// HeartbeatTimeout is the longest an attempt may go without a
	// heartbeat (NodeInfo.HeartbeatTimeout); zero keeps the connector's.
	HeartbeatTimeout time.Duration
	// RateLimit replaces the connector's rate limit (NodeInfo.RateLimit)
	// for this node; the zero value keeps it.
	RateLimit RateLimit
}

func (b *Builder) add(n *FlowNode) {
	if _, dup := b.nodes[n.Alias]; dup {
		b.errs = append(b.errs, fmt.Errorf("node %q added twice", n.Alias))
		return
	}
	b.nodes[n.Alias] = n
	b.flow.Nodes = append(b.flow.Nodes, n)
}

// AddNode adds a connector or inline node.
func AddNode[I, O any](b *Builder, alias string, n TypedNode[I, O], opts NodeOptions) Ref[I, O] {
	r := n.Runner
	if opts.Timeout > 0 || opts.HeartbeatTimeout > 0 || opts.RateLimit.QPS > 0 {
		r = optionsRunner{r, opts}
	}
	b.add(&FlowNode{Alias: alias, Runner: r, Params: opts.Params})
	return Ref[I, O]{alias}
}

// optionsRunner overrides a runner's attempt and heartbeat timeouts and
// its rate limit with the flow's.
type optionsRunner struct {
	Runner
	opts NodeOptions
}

func (t optionsRunner) Info() NodeInfo {
	info := t.Runner.Info()
	if t.opts.Timeout > 0 {
		info.Timeout = t.opts.Timeout
	}
	if t.opts.HeartbeatTimeout > 0 {
		info.HeartbeatTimeout = t.opts.HeartbeatTimeout
	}
	if t.opts.RateLimit.QPS > 0 {
		info.RateLimit = t.opts.RateLimit
	}
	return info
}

// AddSwitch adds a switch: its input leaves unchanged on the port of the
// matching case, so every output has the input's type.
func AddSwitch[T any](b *Builder, alias string, sw Switch) Ref[T, T] {
	b.add(&FlowNode{Alias: alias, Switch: &sw})
	return Ref[T, T]{alias}
}

// AddSleep adds a durable timer: its input leaves unchanged on "out" once
// the sleep's time comes.
func AddSleep[T any](b *Builder, alias string, s Sleep) Ref[T, T] {
	b.add(&FlowNode{Alias: alias, Sleep: &s})
	return Ref[T, T]{alias}
}

// AddCheckpoint adds a human-approval point; its input leaves unchanged on
// "approved" or "rejected".
func AddCheckpoint[T any](b *Builder, alias string, cp Checkpoint) Ref[T, T] {
	b.add(&FlowNode{Alias: alias, Checkpoint: &cp})
	return Ref[T, T]{alias}
}

// AddForEach adds a fan-out over the array field fe.Items of its input I,
// running body once per element (of type E); its output is the array of
// the body's outputs. fe.Do is set to body's alias.
func AddForEach[I, E, O any](b *Builder, alias string, body Ref[E, O], fe ForEach) Ref[I, []O] {
	fe.Do = body.alias
	b.add(&FlowNode{Alias: alias, ForEach: &fe})
	return Ref[I, []O]{alias}
}

// AddSubflow adds a node that runs another registered flow. Values cross
// the boundary as JSON, so its ports are untyped: connect to it with
// Reshape.
func AddSubflow(b *Builder, alias string, sf Subflow) Ref[json.RawMessage, json.RawMessage] {
	b.add(&FlowNode{Alias: alias, Subflow: &sf})
	return Ref[json.RawMessage, json.RawMessage]{alias}
}

// Compensate makes undo the compensation of node n: when a later step of
// the job fails, undo receives n's output, keyed by its undoKey fields.
func Compensate[I, O, U any](b *Builder, n Ref[I, O], undo TypedNode[O, U], undoKey []string) {
	node, ok := b.nodes[n.alias]
	if !ok {
		b.errs = append(b.errs, fmt.Errorf("compensation for unknown node %q", n.alias))
		return
	}
	node.Compensate = &Compensation{Runner: undo.Runner, UndoKey: undoKey}
}

// EdgeOptions are an edge's delivery settings.
type EdgeOptions struct {
	Delivery  Delivery
	DedupeTTL time.Duration
	// MaxIterations > 0 makes the edge a loop's back edge (Edge.MaxIterations).
	MaxIterations int
	// PartitionKey partitions the edge's data (Edge.PartitionKey).
	PartitionKey string
}

// Connect adds an edge from an output to an input of the same type.
func Connect[T any](b *Builder, from Out[T], to In[T], opts EdgeOptions) {
	for _, a := range []string{from.alias, to.alias} {
		if _, ok := b.nodes[a]; !ok {
			b.errs = append(b.errs, fmt.Errorf("edge %s.%s -> %s: no node %q", from.alias, from.port, to.alias, a))
			return
		}
	}
	b.flow.Edges = append(b.flow.Edges, Edge{
		From: from.alias, FromPort: from.port, To: to.alias,
		Delivery: opts.Delivery, DedupeTTL: opts.DedupeTTL, MaxIterations: opts.MaxIterations, PartitionKey: opts.PartitionKey,
	})
}

// Reshape views an output of type A as type B. Values travel as JSON, so
// this is sound exactly when B's schema accepts every A; flowgen gen emits
// it only for edges whose schemas it proved compatible (DAG201 passes)
// but whose Go types differ. Writing it by hand bypasses that proof.
func Reshape[A, B any](o Out[A]) Out[B] { return Out[B](o) }

// Build returns the flow, or every mistake made while building it.
func (b *Builder) Build() (*Flow, error) {
	if len(b.errs) > 0 {
		return nil, fmt.Errorf("flow %s: %w", b.flow.Name, errors.Join(b.errs...))
	}
	f := b.flow
	return &f, nil
}

// Inline makes a node of a pure Go function of the flow's package (a flow
// node with uses: go:Name): Pure and Strict, no capabilities, no key. The
// function's parameter and result types are the node's ports.
func Inline[I, O any](name string, fn func(I) (O, error)) TypedNode[I, O] {
	return InlineContext(name, func(_ context.Context, in I) (O, error) { return fn(in) })
}

// InlineContext is Inline for a function that takes a context first, to
// observe cancellation.
func InlineContext[I, O any](name string, fn func(context.Context, I) (O, error)) TypedNode[I, O] {
	info := NodeInfo{ID: "go:" + name, Version: "0.0.0", Effects: Pure, Determinism: Strict}
	return TypedNode[I, O]{Typed(info, func(ctx *Context, _ struct{}, in I) (O, error) { return fn(ctx, in) })}
}
