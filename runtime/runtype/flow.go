package runtype

import (
	"encoding/json"
	"time"

	"github.com/flowgen-dev/flowgen/flowtype"
)

// Subflow runs another registered flow as one node, as a child job: only
// the child's entry nodes listed in Inputs receive the parent's input (the
// boundary artifact: inline up to 64 KiB, a store reference above), and the
// node's output is the child's result, its terminal outputs by alias.
// Killing the parent kills the child.
type Subflow struct {
	Flow   string
	Inputs []string
	// MaxDepth bounds nesting (default 8): a subflow deeper than its
	// limit fails with PolicyDenied instead of starting.
	MaxDepth int
	// Budget is the child job's budget, cut down to what the parent has
	// left when the child starts (zero: all of it). A parent with nothing
	// left fails the node with PolicyDenied instead of starting the child.
	Budget Budget
}

// Sleep is a durable timer: the activation parks, holding no worker, and
// its input leaves unchanged on "out" once the time comes. Exactly one of
// For and Until is set.
type Sleep struct {
	// For is how long to wait from when the activation is first delivered.
	For time.Duration
	// Until is the dotted path of a field of the input holding the time to
	// wake at (RFC 3339); a time in the past wakes at once.
	Until string
}

// Checkpoint is a human-approval point.
type Checkpoint struct {
	Prompt string
}

// Switch selects an output port by a field of the input.
type Switch struct {
	// On is the dotted path of the field to compare.
	On    string
	Cases []Case
	// Default is the port used when no case matches; empty drops the input.
	Default string
}

// Case is one switch case: Label is taken when the field equals Equals.
type Case struct {
	Label  string
	Equals json.RawMessage
}

// ForEach fans out over an array field.
type ForEach struct {
	Items string
	Do    string
	// Aggregate decides when the join succeeds: AggregateAll (every element
	// succeeded; the default), AggregateAny (at least one) or
	// AggregateQuorum (at least Quorum). Failed elements are null in the
	// output array.
	Aggregate Aggregate
	Quorum    int
	// Concurrency bounds the body activations in flight at once (0: all
	// elements at once). Elements start in order; each finished one starts
	// the next.
	Concurrency int
}

// Aggregate is a forEach join policy.
type Aggregate string

// The join policies.
const (
	AggregateAll    Aggregate = ""
	AggregateAny    Aggregate = "any"
	AggregateQuorum Aggregate = "quorum"
)

// Needed is how many elements must succeed out of n.
func (fe *ForEach) Needed(n int) int {
	switch fe.Aggregate {
	case AggregateAny:
		return min(1, n)
	case AggregateQuorum:
		return min(fe.Quorum, n)
	}
	return n
}

// Edge connects an output port to a node's input. Delivery, ordering and
// partitioning are enforced by the engine per edge.
type Edge struct {
	From, FromPort string
	To             string
	// Delivery is the edge's guarantee. ExactlyOnce consults the dedupe
	// store by the target's idempotency key, so an effect already applied
	// within DedupeTTL (by this job or another) is not applied again and
	// its recorded output is used; AtMostOnce never runs a redelivered
	// activation whose first attempt did not commit.
	Delivery  flowtype.Delivery
	DedupeTTL time.Duration
	// PartitionKey is the dotted path of the field that partitions the
	// edge's data: a target whose idempotency scope is Partition has keys
	// unique per value of it (KeyNode).
	PartitionKey string `json:",omitempty"`
	// MaxIterations > 0 marks the back edge of a bounded loop. Each pass
	// runs To and everything after it again in a fresh dimensional
	// address (its own activation ids, ledgers and results), so passes
	// never overwrite each other; pass MaxIterations+1 fails the job with
	// PolicyDenied instead of running.
	MaxIterations int
}

// Budget bounds what one job may spend. Zero fields are unlimited.
//
// Activations counts every activation the job starts: entry nodes, routed
// nodes, forEach elements and joins, loop passes, resumptions excluded,
// compensations exempt (an undo always runs). An activation past the
// budget fails with PolicyDenied instead of running, so the job fails and
// compensates. A subflow's activations are charged to its parent when the
// subflow ends.
//
// Timeout is wall-clock time from the job's start; an activation that
// would begin after it fails with PolicyDenied.
//
// A subflow's budget is never larger than what its parent has left: the
// child gets the smaller of Subflow.Budget and the parent's remainder, and
// the earlier of the two deadlines.
type Budget struct {
	Activations int64
	Timeout     time.Duration
}

// CompensationFailure is what a job does when one of its compensations
// fails. The zero value is CompensateContinue.
type CompensationFailure string

// The compensation-failure policies.
const (
	// CompensateContinue records the failure and goes on with the next
	// compensation of the chain.
	CompensateContinue CompensationFailure = "continue"
	// CompensateHalt stops the chain at the failed compensation: the ones
	// after it do not run, and the job ends failed saying where it halted.
	CompensateHalt CompensationFailure = "halt"
	// CompensateRetry retries a failed compensation with backoff (the
	// compensator's retry policy, else 1 s doubling to 1 min) until it
	// succeeds, however many attempts and whatever the error kind.
	CompensateRetry CompensationFailure = "retry"
	// CompensatePark parks a failed compensation for a human: the job
	// waits, and a decision at the compensated node (Signal, flowgen
	// signal) retries it (approve) or gives it up and goes on with the
	// next (reject). A compensation that fails again parks again.
	CompensatePark CompensationFailure = "park"
)

// FlowVersion is one definition of a flow a worker serves.
type FlowVersion struct {
	Name    string `json:"name"`
	Version string `json:"version,omitempty"`
	// Hash is the hex SHA-256 of the definition's content; jobs started
	// on it name it by its first 16 digits.
	Hash string `json:"hash"`
	// Newest is set on the version a Start without a version runs.
	Newest bool `json:"newest,omitempty"`
}

// String names the definition: name, version and short hash, as in
// "orders 1.2.0 (3f9a0c1b2d4e5f60)".
func (v FlowVersion) String() string {
	short := v.Hash
	if len(short) > 16 {
		short = short[:16]
	}
	if v.Version == "" {
		return v.Name + " (" + short + ")"
	}
	return v.Name + " " + v.Version + " (" + short + ")"
}
