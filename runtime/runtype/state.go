package runtype

import "errors"

// JobState is where a job stands.
type JobState string

// Job states.
const (
	StateRunning   JobState = "running"
	StateSucceeded JobState = "succeeded"
	StateFailed    JobState = "failed"
	StateKilled    JobState = "killed"
)

// ActivationState is where an activation stands, as inspection sees it.
type ActivationState string

// Activation states, in the order a tally lists them.
const (
	ActivationSucceeded ActivationState = "succeeded"
	ActivationFailed    ActivationState = "failed"
	ActivationTimeout   ActivationState = "timeout"  // failed: its last attempt ran out of time
	ActivationCanceled  ActivationState = "canceled" // the job was killed first
	ActivationLaunched  ActivationState = "launched" // delivered: running or retrying
	ActivationEnqueued  ActivationState = "enqueued"
	ActivationParked    ActivationState = "parked" // waiting for a signal or a subflow
	// ActivationDeadLettered: its message is on the dead-letter stream,
	// waiting for an operator (flowgen dlq).
	ActivationDeadLettered ActivationState = "dead-lettered"
	ActivationPending      ActivationState = "pending" // a forEach element beyond its window
)

// ActivationStates lists every activation state in tally order.
var ActivationStates = []ActivationState{ActivationSucceeded, ActivationFailed, ActivationTimeout, ActivationCanceled,
	ActivationLaunched, ActivationEnqueued, ActivationParked, ActivationDeadLettered, ActivationPending}

// FailureKind is what a failed activation's result records: the name of an
// error kind (flowtype.ErrorKind) for a failure of the node or of a policy, or one of the
// outcomes only the engine produces: Canceled, NotDelivered, Exhausted and
// DeadLettered.
type FailureKind string

// The failures only the engine records.
const (
	// Canceled: the job was killed before the activation ran.
	Canceled FailureKind = "Canceled"
	// NotDelivered: an at-most-once activation whose earlier attempt did
	// not commit, so it is not run again.
	NotDelivered FailureKind = "NotDelivered"
	// Exhausted: the activation can never make progress, so it fails
	// instead of being delivered forever: its deliveries ran past its
	// retry attempts with none of them recording an outcome (the worker
	// crashed or stopped in each, a crash loop), or its activity ledger
	// reached its ceiling.
	Exhausted FailureKind = "Exhausted"
	// DeadLettered: an operator failed the activation's dead letter
	// (flowgen dlq fail), so its job goes on by its error policy.
	DeadLettered FailureKind = "DeadLettered"
)

// ErrUnknownFlow: the engine has no flow of that name registered.
var ErrUnknownFlow = errors.New("not registered with this engine")

// ErrFlowVersionMissing: the engine has the flow, but not the version (or
// definition) named.
var ErrFlowVersionMissing = errors.New("version not registered with this engine")

// ErrKeyInUse: a job key already names a job of another flow.
var ErrKeyInUse = errors.New("job key in use by another flow")

// ErrBadQuery: a job query that cannot be answered (unknown state, bad
// cursor, page too large).
var ErrBadQuery = errors.New("bad job query")
