package protocol

import (
	"encoding/json"
	"time"

	"github.com/flowgen-dev/flowgen/runtime/runtype"
)

// Result is an activation's write-once outcome, as its steps commit
// writes it (JSON, under the activation's result key).
type Result struct {
	// Act is the activation the result belongs to (its key segment may be
	// hashed), for inspection.
	Act    string          `json:"act,omitempty"`
	Output json.RawMessage `json:"output,omitempty"`
	// Port is the output port the output leaves on ("out", or a switch
	// label; empty when a switch matched nothing).
	Port     string              `json:"port,omitempty"`
	ErrKind  runtype.FailureKind `json:"errorKind,omitempty"`
	Err      string              `json:"error,omitempty"`
	Attempts int                 `json:"attempts"`
	// TimedOut is set when the final attempt ran out of its timeout.
	TimedOut bool `json:"timedOut,omitempty"`
	// Elements is the fan-out size of a forEach activation.
	Elements int `json:"elements,omitempty"`
	// Deduplicated names the job whose recorded output an exactly-once
	// activation reused instead of running.
	Deduplicated string `json:"deduplicated,omitempty"`
	// Cached names the job whose output a cached connector's activation
	// reused instead of calling the node.
	Cached string `json:"cached,omitempty"`
	// Steps is the aspect step log of the attempt that produced the result.
	Steps AspectLog `json:"steps,omitempty"`
	// Finished is when the result was committed.
	Finished time.Time `json:"finished,omitzero"`
	// Since is when the delivery that produced the result entered.
	Since time.Time `json:"since,omitzero"`
	// Recorded is the result's place in its job's history (protocol.HistoryPlace)
	// when the result is its activation's outcome event (history.go):
	// none on a timer's firing, whose event is a value of its own, nor on
	// results written before results were events.
	Recorded string `json:"recorded,omitempty"`
}

// Failed reports whether the activation failed.
func (r Result) Failed() bool { return r.Err != "" }

// AspectStep is one entry of an activation's aspect step log: which aspect
// of the processor ran, whether it started, ended or failed, and when.
type AspectStep struct {
	Aspect string    `json:"aspect"`
	Phase  string    `json:"phase"`
	At     time.Time `json:"at"`
	Detail string    `json:"detail,omitempty"`
}

// AspectLog is committed with the attempt it describes: in the result of
// the final attempt, under log/<act>/<attempt> for retried ones.
type AspectLog []AspectStep

// Add appends a step of aspect in phase at at.
func (l *AspectLog) Add(at time.Time, aspect, phase, detail string) {
	*l = append(*l, AspectStep{Aspect: aspect, Phase: phase, At: at.UTC(), Detail: detail})
}
