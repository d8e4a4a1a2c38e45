package runtype

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"
)

// JobStatus is a job's state and, once finished, its result: the outputs
// of its terminal activations by node alias, and every activation error.
type JobStatus struct {
	State  JobState                   `json:"state"`
	Result map[string]json.RawMessage `json:"result,omitempty"`
	Errors []string                   `json:"errors,omitempty"`
	// Compensated lists the activations whose effects were undone, in the
	// order the undos ran (newest effect first).
	Compensated []string `json:"compensated,omitempty"`
	// Started and Finished are wall-clock times of the start and of the
	// completion commit (Finished is zero while running).
	Started  time.Time `json:"started"`
	Finished time.Time `json:"finished,omitzero"`
}

// Done reports whether the job has finished.
func (s JobStatus) Done() bool { return s.State != StateRunning && s.State != "" }

// Decision is a human's answer at a checkpoint.
type Decision struct {
	Approved bool   `json:"approved"`
	By       string `json:"by,omitempty"`
	Note     string `json:"note,omitempty"`
}

// Inspection is a job's stored state: key by key, and as a tree of
// activations.
type Inspection struct {
	Job string `json:"job"`
	// Flow, Version and Definition (the content hash's first 16 digits)
	// name the definition the job runs on; Key is the job key it was
	// started under (StartOnce), Parent the subflow activation that
	// started it, and Input its input.
	Flow       string            `json:"flow,omitempty"`
	Version    string            `json:"version,omitempty"`
	Definition string            `json:"definition,omitempty"`
	Key        string            `json:"key,omitempty"`
	Parent     string            `json:"parent,omitempty"`
	Input      json.RawMessage   `json:"input,omitempty"`
	Status     JobStatus         `json:"status"`
	Summary    string            `json:"summary"`
	Tree       []*ActivationView `json:"tree"`
	// History is the job's events in time order (EventKind), each
	// written with the state change it describes.
	History []HistoryEvent    `json:"history,omitempty"`
	Entries []InspectionEntry `json:"entries"`
}

// ActivationView is one activation of a job as inspection sees it.
type ActivationView struct {
	// Act is the activation id: node@dimension<predecessor. The dimension
	// ("/2" for forEach element 2, "/poll~3" for the third pass of a loop
	// into poll) makes every run of a node distinct.
	Act  string `json:"act"`
	Node string `json:"node"`
	Dim  string `json:"dim,omitempty"`
	// Index is the element number of a forEach element (-1 otherwise).
	Index int `json:"index"`
	// State is pending (not yet started: a forEach element beyond its
	// concurrency window), enqueued, launched (delivered, running or
	// retrying), parked (waiting for a signal or a subflow), succeeded,
	// failed, canceled (the job was killed) or timeout.
	State    ActivationState `json:"state"`
	Attempts int             `json:"attempts,omitempty"`
	Error    string          `json:"error,omitempty"`
	// Finished is when the activation's result was committed (zero while
	// it runs, and for results stored before times were recorded).
	Finished time.Time `json:"finished,omitzero"`
	// Port is the output port a finished activation's output left on (a
	// switch's label, a checkpoint's approved or rejected).
	Port string `json:"port,omitempty"`
	// Output is a succeeded activation's output, as committed.
	Output json.RawMessage `json:"output,omitempty"`
	// Child is the job a subflow activation started.
	Child string `json:"child,omitempty"`
	// Ledger is the activity ledger's value and its digits in words.
	Ledger      int64  `json:"ledger,omitempty"`
	LedgerWords string `json:"ledgerWords,omitempty"`
	// Elements is a forEach's fan-out size; Children its elements.
	Elements int               `json:"elements,omitempty"`
	Children []*ActivationView `json:"children,omitempty"`
}

// InspectionEntry is one key of a job's state.
type InspectionEntry struct {
	Key   string          `json:"key"`
	Value json.RawMessage `json:"value,omitempty"`
	Text  string          `json:"text,omitempty"`
	// Counter and Words are set for counters: the raw value and, for
	// ledgers, its digits decoded.
	Counter *int64 `json:"counter,omitempty"`
	Words   string `json:"words,omitempty"`
}

// JobQuery filters and pages a job listing. The zero query lists the
// newest top-level jobs.
type JobQuery struct {
	// State keeps jobs in this state; "waiting" keeps running jobs with a
	// checkpoint waiting for a decision, "paused" paused ones.
	State string `json:"state,omitempty"`
	// Flow keeps jobs of this flow, Version those started on this
	// version of it.
	Flow    string `json:"flow,omitempty"`
	Version string `json:"version,omitempty"`
	// Since and Until keep jobs started in [Since, Until).
	Since time.Time `json:"since,omitzero"`
	Until time.Time `json:"until,omitzero"`
	// Where keeps jobs whose input has every field (a dotted path) equal
	// to its value: strings compare as text, other values as their JSON.
	Where map[string]string `json:"where,omitempty"`
	// Key keeps the job started under this job key (StartOnce).
	Key string `json:"key,omitempty"`
	// Subflows includes the jobs subflow nodes started.
	Subflows bool `json:"subflows,omitempty"`
	// Limit is the page size (default 20, at most 1000).
	Limit int `json:"limit,omitempty"`
	// After continues a listing: the Next of the previous page.
	After string `json:"after,omitempty"`
}

// JobStates are the values JobQuery.State accepts.
var JobStates = []string{string(StateRunning), "waiting", "paused", string(StateSucceeded), string(StateFailed), string(StateKilled)}

// JobSummary is one job of a listing.
type JobSummary struct {
	Job      string    `json:"job"`
	Flow     string    `json:"flow"`
	State    JobState  `json:"state"`
	Started  time.Time `json:"started"`
	Finished time.Time `json:"finished,omitzero"`
	// Parent is the job that started this one through a subflow node.
	Parent string `json:"parent,omitempty"`
	Paused bool   `json:"paused,omitempty"`
	// Waiting lists the checkpoint nodes waiting for a decision.
	Waiting []string `json:"waiting,omitempty"`
	// Errors counts the activation errors of a finished job.
	Errors int `json:"errors,omitempty"`
}

// JobList is one page of jobs, newest first; Next, when set, is the After
// of the following page.
type JobList struct {
	Jobs []JobSummary `json:"jobs"`
	Next string       `json:"next,omitempty"`
}

// ID is the activation id v shows, parsed from Act; the zero id when Act
// does not parse (a key written by a foreign tool, or a pending element).
func (v *ActivationView) ID() ActivationID {
	id, _ := Parse(v.Act)
	return id
}

// Check reports a query no listing can answer: an unknown state or too large
// a page (ErrBadQuery).
func (q JobQuery) Check() error {
	if q.State != "" && !slices.Contains(JobStates, q.State) {
		return fmt.Errorf("%w: unknown state %q: want one of %s", ErrBadQuery, q.State, strings.Join(JobStates, ", "))
	}
	if q.Limit > 1000 {
		return fmt.Errorf("%w: limit %d: at most 1000", ErrBadQuery, q.Limit)
	}
	return nil
}
