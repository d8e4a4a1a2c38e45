package runtime

import "github.com/flowgen-dev/flowgen/runtime/runtype"

// The vocabulary of the durable protocol lives in the leaf package
// runtype; these are the names users of the runtime know it by.

// JobID is a job's root id: a UUIDv7, so ids sort by creation time.
type JobID = runtype.JobID

// Swept reports what one Engine.Sweep deleted.
type Swept = runtype.Swept

// NewJobID returns a fresh UUIDv7 job id.
func NewJobID() (JobID, error) { return runtype.NewJobID() }

// ParseJobID parses the base64url form JobID.String prints.
func ParseJobID(s string) (JobID, error) { return runtype.ParseJobID(s) }

// MessageID names one message of a stream (a dead letter, say).
type MessageID = runtype.MessageID

// ParseMessageID parses the base64url form MessageID.String prints.
func ParseMessageID(s string) (MessageID, error) { return runtype.ParseMessageID(s) }

// HistoryEvent is one event of a job's history (Inspection.History).
type HistoryEvent = runtype.HistoryEvent

// EventKind is what a history event records.
type EventKind = runtype.EventKind

// The events of a job's history.
const (
	EventStarted      = runtype.EventStarted
	EventLaunched     = runtype.EventLaunched
	EventRetrying     = runtype.EventRetrying
	EventParked       = runtype.EventParked
	EventSucceeded    = runtype.EventSucceeded
	EventFailed       = runtype.EventFailed
	EventCanceled     = runtype.EventCanceled
	EventPaused       = runtype.EventPaused
	EventResumed      = runtype.EventResumed
	EventKilled       = runtype.EventKilled
	EventSignaled     = runtype.EventSignaled
	EventTimerFired   = runtype.EventTimerFired
	EventCompensating = runtype.EventCompensating
	EventFinished     = runtype.EventFinished
)

// CompensationFailure is a flow's policy for a compensation that fails
// (Flow.OnCompensationFailure).
type CompensationFailure = runtype.CompensationFailure

// The compensation-failure policies.
const (
	CompensateContinue = runtype.CompensateContinue
	CompensateHalt     = runtype.CompensateHalt
	CompensateRetry    = runtype.CompensateRetry
	CompensatePark     = runtype.CompensatePark
)

// Cache is a connector's result cache (NodeInfo.Cache).
type Cache = runtype.Cache

// RateLimit is a connector's token bucket, shared by every worker of a
// store (NodeInfo.RateLimit).
type RateLimit = runtype.RateLimit

// Schedule starts a flow's jobs at the ticks of a cron expression
// (Engine.AddSchedule).
type Schedule = runtype.Schedule

// Overlap is what a schedule's tick does while the last tick's job runs.
type Overlap = runtype.Overlap

// The overlap policies.
const (
	OverlapSkip   = runtype.OverlapSkip
	OverlapBuffer = runtype.OverlapBuffer
	OverlapAllow  = runtype.OverlapAllow
)

// FlowVersion is one definition of a flow an engine serves.
type FlowVersion = runtype.FlowVersion

// FlowGraph is a served flow definition as a graph (Engine.FlowGraph).
type FlowGraph = runtype.FlowGraph

// GraphNode and GraphEdge are a FlowGraph's nodes and edges.
type (
	GraphNode = runtype.GraphNode
	GraphEdge = runtype.GraphEdge
)

// Sensitive reports whether values of a data class (GraphNode.DataClass)
// must not be shown to someone reading a job: personal, financial, health,
// credential and confidential data, and their subclasses.
func Sensitive(class string) bool { return runtype.Sensitive(class) }

// NodeKind is what a flow node is (GraphNode.Kind).
type NodeKind = runtype.NodeKind

// The kinds of flow node.
const (
	NodeTask       = runtype.NodeTask
	NodeSwitch     = runtype.NodeSwitch
	NodeForEach    = runtype.NodeForEach
	NodeCheckpoint = runtype.NodeCheckpoint
	NodeSubflow    = runtype.NodeSubflow
	NodeSleep      = runtype.NodeSleep
)

// DeadLetter is a message on the dead-letter stream, as an operator sees
// it (Engine.DeadLetters).
type DeadLetter = runtype.DeadLetter

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
	ActivationSucceeded    = runtype.ActivationSucceeded
	ActivationFailed       = runtype.ActivationFailed
	ActivationTimeout      = runtype.ActivationTimeout
	ActivationCanceled     = runtype.ActivationCanceled
	ActivationLaunched     = runtype.ActivationLaunched
	ActivationEnqueued     = runtype.ActivationEnqueued
	ActivationParked       = runtype.ActivationParked
	ActivationDeadLettered = runtype.ActivationDeadLettered
	ActivationPending      = runtype.ActivationPending
)

// ActivationStates lists every activation state in tally order.
var ActivationStates = runtype.ActivationStates

// FailureKind is what a failed activation's result records.
type FailureKind = runtype.FailureKind

// The failures only the engine records.
const (
	Canceled     = runtype.Canceled
	NotDelivered = runtype.NotDelivered
	Exhausted    = runtype.Exhausted
	DeadLettered = runtype.DeadLettered
)

// Sentinel errors callers branch on (errors.Is).
var (
	ErrUnknownFlow = runtype.ErrUnknownFlow
	// ErrFlowVersionMissing: the flow is registered, the version named is
	// not.
	ErrFlowVersionMissing = runtype.ErrFlowVersionMissing
	ErrBadQuery           = runtype.ErrBadQuery
	// ErrDeadLetterTaken: the dead letter was requeued when asked to fail,
	// or failed when asked to requeue.
	ErrDeadLetterTaken = runtype.ErrDeadLetterTaken
	// ErrUndecodable: a dead letter whose task does not decode cannot fail
	// its activation.
	ErrUndecodable = runtype.ErrUndecodable
	ErrKeyInUse    = runtype.ErrKeyInUse
)

// A node's declaration and retry policy (runtype holds them, so the engine
// below this package reads them too).
type (
	// NodeInfo is what the runtime needs to know about a connector;
	// generated code fills it from the spec.
	NodeInfo = runtype.NodeInfo
	// RetryPolicy says how the orchestrator retries a failed activation.
	RetryPolicy = runtype.RetryPolicy
)

// The parts of a flow that hold no node code.
type (
	// Edge connects an output port to a node's input.
	Edge = runtype.Edge
	// Switch selects an output port by a field of the input.
	Switch = runtype.Switch
	// Case is one switch case.
	Case = runtype.Case
	// ForEach fans a node out over the elements of an array.
	ForEach = runtype.ForEach
	// Aggregate is a forEach join policy.
	Aggregate = runtype.Aggregate
	// Subflow runs another registered flow as one node, as a child job.
	Subflow = runtype.Subflow
	// Checkpoint is a human-approval point.
	Checkpoint = runtype.Checkpoint
	// Sleep is a durable timer node (FlowNode.Sleep).
	Sleep = runtype.Sleep
	// Budget bounds what one job may spend.
	Budget = runtype.Budget
)

// The forEach join policies.
const (
	AggregateAll    = runtype.AggregateAll
	AggregateAny    = runtype.AggregateAny
	AggregateQuorum = runtype.AggregateQuorum
)

// What the engine reports about jobs.
type (
	// JobStatus is a job's state and, once finished, its result.
	JobStatus = runtype.JobStatus
	// Decision is a human's answer at a checkpoint.
	Decision = runtype.Decision
	// Inspection is a job's stored state, key by key and as a tree.
	Inspection = runtype.Inspection
	// ActivationView is one activation of a job as inspection sees it.
	ActivationView = runtype.ActivationView
	// InspectionEntry is one key of a job's state.
	InspectionEntry = runtype.InspectionEntry
	// JobQuery filters and pages a job listing.
	JobQuery = runtype.JobQuery
	// JobSummary is one job of a listing.
	JobSummary = runtype.JobSummary
	// JobList is one page of jobs, newest first.
	JobList = runtype.JobList
)

// JobStates are the values JobQuery.State accepts.
var JobStates = runtype.JobStates
