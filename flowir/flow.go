// Package flowir reads, resolves and validates Flow IR: a directed graph of
// nodes (connector calls and control surfaces) joined by typed edges.
//
// A flow file (YAML for authoring, JSON as the canonical form) starts with
//
//	apiVersion: flowgen.dev/v1
//	kind: Flow
//
// Nodes are a closed set of kinds, like go/ast's: a connector call (uses:
// id@range, or spec: a local spec path), an inline Go function (uses:
// go:Name), a switch, a forEach fan-out with aggregator, a subflow and a
// human-approval checkpoint. Every node and edge carries its source position.
//
// Validation is a list of independent passes (Passes), each reporting
// diagnostics into one list, so adding a check means adding a pass. A port is
// written alias.port; the alias is everything before the first dot, so a
// subflow's ports (themselves alias.port inside the child) read
// "sub.child.port".
package flowir

import (
	"fmt"

	"github.com/flowgen-dev/flowgen/connectorspec"
	"github.com/flowgen-dev/flowgen/diag"
	"github.com/flowgen-dev/flowgen/flowtype"
	"github.com/flowgen-dev/flowgen/internal/strictyaml"
)

// Kind is the kind header value of a Flow file.
const Kind = "Flow"

// DefaultMaxSubflowDepth bounds subflow nesting when the flow sets no limit.
const DefaultMaxSubflowDepth = 8

// Flow is one parsed flow file.
type Flow struct {
	diag.Source `json:"-"`
	APIVersion  string      `json:"apiVersion" flowgen:"required" const:"flowgen.dev/v1" doc:"Format version; must be flowgen.dev/v1."`
	Kind        string      `json:"kind" flowgen:"required" const:"Flow" doc:"Must be Flow."`
	ID          string      `json:"id" flowgen:"required" doc:"Dotted flow id, e.g. orders.fulfilment."`
	Name        string      `json:"name,omitempty" doc:"Human-readable name."`
	Version     string      `json:"version" flowgen:"required" doc:"Semantic version of this flow."`
	Profile     string      `json:"profile,omitempty" doc:"Deployment profile (dev, prod, ...); default is default."`
	Connectors  []string    `json:"connectors,omitempty" doc:"Directories or files, relative to this file, to find connector specs in."`
	Nodes       []*Node     `json:"nodes" flowgen:"required" doc:"The flow's nodes."`
	Edges       []*Edge     `json:"edges,omitempty" doc:"Connections from alias.port to alias.port."`
	Policies    Policies    `json:"policies,omitzero" doc:"Flow-wide policies."`
	Schedules   []*Schedule `json:"schedules,omitempty" doc:"Cron schedules that start jobs of this flow; every worker that registers the flow keeps them, and each tick starts one job between them."`

	// File is the path the flow was loaded from.
	File string `json:"-"`
}

// Node is one node of a flow. Exactly one of Uses, Spec, Switch, ForEach,
// Subflow, Checkpoint and Sleep is set; Kind says which.
type Node struct {
	diag.Source `json:"-"`
	Alias       string            `json:"alias" flowgen:"required" doc:"Name of the node within the flow."`
	Uses        string            `json:"uses,omitempty" doc:"Connector as id@range, or go:FuncName for an inline pure function."`
	Spec        string            `json:"spec,omitempty" doc:"Path of a local ConnectorSpec file, relative to the flow."`
	Params      strictyaml.Raw    `json:"params,omitzero" doc:"Connector params."`
	Overrides   *Overrides        `json:"overrides,omitempty" doc:"Tighter effects or determinism than the connector declares."`
	Switch      *Switch           `json:"switch,omitempty" doc:"Route the input to one labelled output."`
	ForEach     *ForEach          `json:"forEach,omitempty" doc:"Fan out over an array and aggregate the results."`
	Subflow     *Subflow          `json:"subflow,omitempty" doc:"Run another flow as this node."`
	Checkpoint  *Checkpoint       `json:"checkpoint,omitempty" doc:"Wait for a human approval."`
	Sleep       *Sleep            `json:"sleep,omitempty" doc:"Wait, holding no worker, for a duration or until a time in the input; the input leaves unchanged."`
	Timeout     flowtype.Duration `json:"timeout,omitzero" doc:"Deadline for one call of the node."`
	// HeartbeatTimeout is the longest one call may go without a heartbeat.
	HeartbeatTimeout flowtype.Duration        `json:"heartbeatTimeout,omitzero" doc:"Longest one call of a connector or inline node may go without a heartbeat; past it the call is cancelled and fails as a Transient timeout, retried by policy, long before the job's lease runs out."`
	RateLimit        *connectorspec.RateLimit `json:"rateLimit,omitempty" doc:"Calls per second for this node."`
	OnError          *ErrorHandler            `json:"onError,omitempty" doc:"What the orchestrator does when the node fails."`
	Run              RunMode                  `json:"run,omitempty" doc:"How a connector node runs: confined (its certified module, with only the capabilities its spec declares; the default for a pulled connector) or native (its Go in the engine's process; the default for any other)."`
}

// NodeKind is the closed set of node kinds.
type NodeKind int

const (
	// KindInvalid is a node with none or several of the kind fields set.
	KindInvalid NodeKind = iota
	// KindConnector calls a connector named by id@range or local spec path.
	KindConnector
	// KindInline calls a pure Go function of the flow's package (uses: go:Name).
	KindInline
	// KindSwitch routes its input to the output named by the matching case.
	KindSwitch
	// KindForEach runs a body node per array element and aggregates.
	KindForEach
	// KindSubflow runs another flow.
	KindSubflow
	// KindCheckpoint waits for a human decision.
	KindCheckpoint
	// KindSleep waits for a duration or until a time: a durable timer.
	KindSleep
)

var kindNames = []string{"invalid", "connector", "inline", "switch", "forEach", "subflow", "checkpoint", "sleep"}

func (k NodeKind) String() string { return kindNames[k] }

// InlinePrefix marks a uses: value that names a Go function.
const InlinePrefix = "go:"

// Kind reports the node's kind.
func (n *Node) Kind() NodeKind {
	var kinds []NodeKind
	if n.Uses != "" {
		if len(n.Uses) > len(InlinePrefix) && n.Uses[:len(InlinePrefix)] == InlinePrefix {
			kinds = append(kinds, KindInline)
		} else {
			kinds = append(kinds, KindConnector)
		}
	}
	if n.Spec != "" {
		kinds = append(kinds, KindConnector)
	}
	if n.Switch != nil {
		kinds = append(kinds, KindSwitch)
	}
	if n.ForEach != nil {
		kinds = append(kinds, KindForEach)
	}
	if n.Subflow != nil {
		kinds = append(kinds, KindSubflow)
	}
	if n.Checkpoint != nil {
		kinds = append(kinds, KindCheckpoint)
	}
	if n.Sleep != nil {
		kinds = append(kinds, KindSleep)
	}
	if len(kinds) != 1 {
		return KindInvalid
	}
	return kinds[0]
}

// Overrides tighten what a connector declares for one node.
type Overrides struct {
	diag.Source `json:"-"`
	Effects     *flowtype.Effects     `json:"effects,omitempty" doc:"Effects no weaker than the connector's."`
	Determinism *flowtype.Determinism `json:"determinism,omitempty" doc:"Determinism no weaker than the connector's."`
}

// Switch routes its input to the output port named by the first case whose
// value equals the input field On, or to Default.
type Switch struct {
	diag.Source `json:"-"`
	On          string `json:"on" flowgen:"required" doc:"Dotted path of the input field to switch on."`
	Cases       []Case `json:"cases" flowgen:"required" doc:"Labelled cases; each label is an output port."`
	Default     string `json:"default,omitempty" doc:"Output port for inputs no case matches."`
}

// Case is one labelled switch case.
type Case struct {
	diag.Source `json:"-"`
	Label       string         `json:"label" flowgen:"required" doc:"Output port name."`
	Equals      strictyaml.Raw `json:"equals" flowgen:"required" doc:"Value of the switched field that selects this case."`
}

// ForEach fans out over the array at Items, runs Do per element and
// aggregates the results on its out port as {results: [...]}.
type ForEach struct {
	diag.Source `json:"-"`
	Items       string    `json:"items" flowgen:"required" doc:"Dotted path of the array field in the input."`
	Key         string    `json:"key,omitempty" doc:"Element field that names each child deterministically."`
	Do          string    `json:"do" flowgen:"required" doc:"Alias of the node run per element."`
	Concurrency int       `json:"concurrency,omitempty" doc:"Children in flight at once (default 1)."`
	Aggregate   Aggregate `json:"aggregate,omitempty" doc:"all, any or quorum."`
	Quorum      int       `json:"quorum,omitempty" doc:"Successes needed when aggregate is quorum."`
}

// Subflow runs another flow as a node; only the listed inputs cross in.
type Subflow struct {
	diag.Source `json:"-"`
	Flow        string   `json:"flow" flowgen:"required" doc:"Path of the child flow file, relative to this one."`
	Inputs      []string `json:"inputs" flowgen:"required" doc:"Child entry ports (alias.port) the parent may feed."`
	Budget      *Budget  `json:"budget,omitempty" doc:"The child job's budget, cut down to what the parent has left when the child starts."`
}

// Budget bounds what one job may spend; zero fields are unlimited.
type Budget struct {
	diag.Source `json:"-"`
	Activations int               `json:"activations,omitempty" doc:"Activations the job may start (nodes, forEach elements, loop passes; compensations exempt)."`
	Timeout     flowtype.Duration `json:"timeout,omitzero" doc:"Wall-clock time from the job's start after which no activation begins."`
}

// Checkpoint pauses the job until a human approves or rejects.
type Checkpoint struct {
	diag.Source `json:"-"`
	Prompt      string            `json:"prompt" flowgen:"required" doc:"What the approver is asked."`
	Approvers   []string          `json:"approvers,omitempty" doc:"Groups or people allowed to decide."`
	Timeout     flowtype.Duration `json:"timeout,omitzero" doc:"How long to wait before taking the rejected port."`
}

// Sleep is a durable timer node: exactly one of for and until.
type Sleep struct {
	diag.Source `json:"-"`
	For         flowtype.Duration `json:"for,omitzero" doc:"How long to wait from when the node is first reached."`
	Until       string            `json:"until,omitempty" doc:"Dotted path of an input field holding the time (RFC 3339) to wait until; a past time goes on at once."`
}

// ErrorHandler says what the orchestrator does when a node fails.
type ErrorHandler struct {
	diag.Source `json:"-"`
	Strategy    Strategy                   `json:"strategy" flowgen:"required" doc:"retry, dead-letter, compensate or halt."`
	Retry       *connectorspec.RetryPolicy `json:"retry,omitempty" doc:"Policy for strategy retry."`
}

// Edge connects an output port to an input port.
type Edge struct {
	diag.Source  `json:"-"`
	From         string            `json:"from" flowgen:"required" doc:"Source as alias.port."`
	To           string            `json:"to" flowgen:"required" doc:"Target as alias.port."`
	Delivery     flowtype.Delivery `json:"delivery,omitzero" doc:"AtLeastOnce (default), AtMostOnce or ExactlyOnce."`
	Ordering     flowtype.Ordering `json:"ordering,omitzero" doc:"Ordered (default) or Unordered. Declared only: the runtime does not enforce ordering yet."`
	PartitionKey string            `json:"partitionKey,omitempty" doc:"Dotted path of the field that partitions the edge."`
	Buffer       *Buffer           `json:"buffer,omitempty" doc:"Queue budget of the edge."`
	Timeout      flowtype.Duration `json:"timeout,omitzero" doc:"Deadline for delivery."`
	Cycle        *Cycle            `json:"cycle,omitempty" doc:"Marks the edge as the back edge of a bounded loop: it leaves a switch or checkpoint port and returns to a node that leads to it."`
}

// MaxCycleIterations is the most re-entries a cycle edge may allow.
const MaxCycleIterations = 1_000_000

// Cycle bounds a loop. Each pass through the back edge runs the target and
// everything after it again in a fresh dimensional address, so no pass
// overwrites another's state; one pass more than MaxIterations fails the
// job with PolicyDenied.
type Cycle struct {
	diag.Source   `json:"-"`
	MaxIterations int `json:"maxIterations" flowgen:"required" doc:"Passes through the back edge allowed per run of the loop (1 to 1000000)."`
}

// Buffer is an edge's queue budget.
type Buffer struct {
	diag.Source `json:"-"`
	MaxItems    int    `json:"maxItems" flowgen:"required" doc:"Messages queued at most."`
	OnFull      OnFull `json:"onFull,omitempty" doc:"block (default), drop-oldest or dead-letter."`
}

// Schedule starts a job of the flow at every tick of a cron expression,
// under the job key schedule/<name>/<tick>.
type Schedule struct {
	diag.Source `json:"-"`
	Name        string            `json:"name" flowgen:"required" doc:"Identifies the schedule and its state in the store; no slashes."`
	Cron        string            `json:"cron" flowgen:"required" doc:"Five-field cron expression (*/5 * * * *) or @hourly, @daily, @every 90s; in UTC."`
	Input       strictyaml.Raw    `json:"input,omitzero" doc:"The input of every tick's job; checked against the flow's input schema. Default: {}."`
	Overlap     Overlap           `json:"overlap,omitempty" doc:"What a tick does while the job of the tick before still runs: skip it (default), buffer it until that job ends, or allow it to start anyway."`
	CatchUp     flowtype.Duration `json:"catchUp,omitzero" doc:"How far back ticks missed while no worker ran are started when one comes back (default 1h); older ones are dropped."`
}

// Policies are flow-wide rules.
type Policies struct {
	diag.Source     `json:"-"`
	DedupeStore     string   `json:"dedupeStore,omitempty" doc:"Dedupe store binding; required by ExactlyOnce edges."`
	Egress          []string `json:"egress,omitempty" doc:"Hosts the flow's connectors may contact."`
	MaxSubflowDepth int      `json:"maxSubflowDepth,omitempty" doc:"Deepest subflow nesting allowed (default 8)."`
	Budget          *Budget  `json:"budget,omitempty" doc:"Bounds each job of the flow; a subflow's budget never exceeds what its parent has left."`
	// OnCompensationFailure is the compensation chain's policy.
	OnCompensationFailure CompensationFailure `json:"onCompensationFailure,omitempty" doc:"When a compensation of a failed job fails: continue with the next (default), halt the chain there, retry it with backoff until it succeeds, or park it until a human decides (flowgen signal at the compensated node: approve retries it, reject gives it up)."`
	// Retention is how long a finished job is kept.
	Retention flowtype.Duration `json:"retention,omitzero" doc:"How long a finished job of the flow is kept (its state, history and job key) before the store's sweeper deletes it; default: the worker's retention, 7 days unless set."`
}

// IsZero reports whether no policy is set, for canonical JSON.
func (p Policies) IsZero() bool {
	return p.DedupeStore == "" && len(p.Egress) == 0 && p.MaxSubflowDepth == 0 && p.Budget == nil && p.OnCompensationFailure == "" && p.Retention == 0
}

// SplitPort splits "alias.port" at the first dot.
func SplitPort(ref string) (alias, port string, err error) {
	for i := range len(ref) {
		if ref[i] == '.' {
			if i == 0 || i == len(ref)-1 {
				break
			}
			return ref[:i], ref[i+1:], nil
		}
	}
	return "", "", fmt.Errorf("%q is not of the form alias.port", ref)
}
