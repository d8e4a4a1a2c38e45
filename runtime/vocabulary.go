package runtime

import "github.com/flowgen-dev/flowgen/runtime/runtype"

// The vocabulary of the durable protocol lives in the leaf package
// runtype; these are the names users of the runtime know it by.

// JobID is a job's root id: a UUIDv7, so ids sort by creation time.
type JobID = runtype.JobID

// NewJobID returns a fresh UUIDv7 job id.
func NewJobID() (JobID, error) { return runtype.NewJobID() }

// ParseJobID parses the base64url form JobID.String prints.
func ParseJobID(s string) (JobID, error) { return runtype.ParseJobID(s) }

// JobState is where a job stands.
type JobState = runtype.JobState

// Job states.
const (
	StateRunning   = runtype.StateRunning
	StateSucceeded = runtype.StateSucceeded
	StateFailed    = runtype.StateFailed
	StateKilled    = runtype.StateKilled
)

// ActivationState is where an activation stands, as inspection sees it.
type ActivationState = runtype.ActivationState

// Activation states, in the order a tally lists them.
const (
	ActivationSucceeded = runtype.ActivationSucceeded
	ActivationFailed    = runtype.ActivationFailed
	ActivationTimeout   = runtype.ActivationTimeout
	ActivationCanceled  = runtype.ActivationCanceled
	ActivationLaunched  = runtype.ActivationLaunched
	ActivationEnqueued  = runtype.ActivationEnqueued
	ActivationParked    = runtype.ActivationParked
	ActivationPending   = runtype.ActivationPending
)

// ActivationStates lists every activation state in tally order.
var ActivationStates = runtype.ActivationStates

// FailureKind is what a failed activation's result records.
type FailureKind = runtype.FailureKind

// The failures only the engine records.
const (
	Canceled     = runtype.Canceled
	NotDelivered = runtype.NotDelivered
)

// Sentinel errors callers branch on (errors.Is).
var (
	ErrUnknownFlow = runtype.ErrUnknownFlow
	ErrBadQuery    = runtype.ErrBadQuery
)
