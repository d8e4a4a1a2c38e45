package runtype

import "time"

// EventKind is what a job history event records.
type EventKind string

// The events of a job's history.
const (
	EventStarted      EventKind = "started"      // the job was created (Detail: its flow definition)
	EventLaunched     EventKind = "launched"     // an activation was delivered again (Attempt): the delivery before reached no outcome, or was retried
	EventRetrying     EventKind = "retrying"     // an attempt failed and the activation will be retried
	EventParked       EventKind = "parked"       // an activation waits for a decision or a subflow job
	EventSucceeded    EventKind = "succeeded"    // an activation's result committed
	EventFailed       EventKind = "failed"       // an activation failed for good (Detail: kind and error)
	EventCanceled     EventKind = "canceled"     // an activation finished canceled (the job was killed)
	EventPaused       EventKind = "paused"       // the job was paused
	EventResumed      EventKind = "resumed"      // the job was resumed
	EventKilled       EventKind = "killed"       // the job was killed (Detail: the reason)
	EventSignaled     EventKind = "signaled"     // a decision was recorded at a checkpoint
	EventTimerFired   EventKind = "timer fired"  // a sleep's time came and its input went on
	EventCompensating EventKind = "compensating" // the job failed and its compensation chain began
	EventFinished     EventKind = "finished"     // the job ended (Detail: its state)
)

// HistoryEvent is one entry of a job's append-only history, written in
// the same commit as the state change it describes.
type HistoryEvent struct {
	At      time.Time `json:"at"`
	Event   EventKind `json:"event"`
	Act     string    `json:"act,omitempty"`
	Attempt int       `json:"attempt,omitempty"`
	Detail  string    `json:"detail,omitempty"`
	// Since is, on an activation's outcome (parked, succeeded, failed,
	// canceled), when the delivery that produced it entered: a first delivery that
	// reaches its outcome has no launched event of its own.
	Since time.Time `json:"since,omitzero"`
}
