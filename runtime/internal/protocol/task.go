package protocol

import (
	"strings"
	"time"

	"github.com/fxamacker/cbor/v2"

	"github.com/flowgen-dev/flowgen/flowtype"
	"github.com/flowgen-dev/flowgen/runtime/runtype"
	"github.com/flowgen-dev/flowgen/runtime/store"
)

// Task is the payload of a work message: one activation to run. Its
// encoding is CBOR with integer keys, fixed by the format version: a
// field's key is never reused.
type Task struct {
	// Kind is what the activation does (entry, step, join or undo); the
	// engine branches on it, never on which other fields are set.
	// Messages published before it existed have none: enter derives it
	// from Act.
	Kind  runtype.Kind `cbor:"20,keyasint,omitempty"`
	Flow  string       `cbor:"1,keyasint"`
	Node  string       `cbor:"2,keyasint"`
	Act   string       `cbor:"3,keyasint"`
	Dim   runtype.Dim  `cbor:"4,keyasint,omitempty"`
	Input []byte       `cbor:"5,keyasint,omitempty"`
	// Join is set on forEach body activations: the forEach activation they
	// report to, their element index and the fan-out size. A join carries
	// the fan-out size in Expect too (joins published before it did read it
	// from the forEach's counter).
	Join   string `cbor:"6,keyasint,omitempty"`
	Index  int    `cbor:"7,keyasint,omitempty"`
	Expect int    `cbor:"8,keyasint,omitempty"`
	// JoinOf is set on the activation that aggregates a forEach.
	JoinOf string `cbor:"9,keyasint,omitempty"`
	// Resume distinguishes the message that resumes a parked activation
	// (after a signal or a kill) from the one that parked it.
	Resume string `cbor:"10,keyasint,omitempty"`
	// Undo is set on compensation activations: the position in the
	// compensation chain (1-based) and its length.
	Undo   int `cbor:"11,keyasint,omitempty"`
	UndoOf int `cbor:"12,keyasint,omitempty"`
	// Delivery and DedupeTTL come from the edge the activation arrived on.
	Delivery  flowtype.Delivery `cbor:"13,keyasint,omitempty"`
	DedupeTTL time.Duration     `cbor:"14,keyasint,omitempty"`
	// InputRef replaces Input when it was too large to travel inline: the
	// sha256 of the input stored under blobs/.
	InputRef string `cbor:"15,keyasint,omitempty"`
	// Window is the forEach concurrency limit a body activation runs
	// under (0: none): finishing starts element Window+finished-1.
	Window int `cbor:"16,keyasint,omitempty"`
	// Refused is set on an activation the router may not run (a loop past
	// its MaxIterations, a spent budget): the processor fails it with
	// PolicyDenied and this reason instead of running it.
	Refused string `cbor:"17,keyasint,omitempty"`
	// MaxActivations and Deadline (Unix nanoseconds) are the job's budget,
	// carried by every task so it is enforced without reading the meta.
	MaxActivations int64 `cbor:"18,keyasint,omitempty"`
	Deadline       int64 `cbor:"19,keyasint,omitempty"`
	// Grouped is set on the forEach bodies of a fan-out: they hold no
	// count on the job semaphore between them. The forEach's count stays
	// with the group and passes to the join (see semaphoreDelta), so no
	// body's commit locks the job's semaphore. Bodies published before it
	// existed hold a count each, and the bodies they start do too.
	Grouped bool `cbor:"21,keyasint,omitempty"`
	// Failed is set on a dead letter an operator failed (FailDeadLetter):
	// the processor fails the activation as DeadLettered with this reason
	// instead of running it, and the job goes on by its error policy.
	Failed string `cbor:"22,keyasint,omitempty"`
	// Wake is set on a sleeping activation's parked task and on the
	// message that wakes it (Resume "timer"): when, in Unix nanoseconds.
	Wake int64 `cbor:"23,keyasint,omitempty"`
	// Via is the edge the activation arrived on ("from.port"; the forEach
	// for its body; none for an entry node) and Partition that edge's
	// partition key path: the idempotency scope of the node's connector
	// composes them into its key (runtype.KeyNode).
	Via       string `cbor:"24,keyasint,omitempty"`
	Partition string `cbor:"25,keyasint,omitempty"`
	// Round numbers the resumptions of a compensation parked under
	// CompensatePark (resumeWaiting).
	Round int `cbor:"26,keyasint,omitempty"`
	// Started is when the job started, in Unix nanoseconds, carried by
	// the tasks of a job with no parent so that the step that closes the
	// job can encode its final status before its commit without reading
	// the job's record (foresee.go). A subflow's job reports to its
	// parent, and its tasks carry none, nor do tasks published before it
	// existed: their jobs' ends are built in the commit.
	Started int64 `cbor:"27,keyasint,omitempty"`
	// Published is when the activation was first published, in Unix
	// nanoseconds: its logical time (Call.At), the same on every attempt
	// and replay. Tasks published before it existed have none, and their
	// logical time is their job's start, or the attempt's.
	Published int64 `cbor:"28,keyasint,omitempty"`
}

// TaskMessage is the work stream message that carries t for job: its id
// is MessageID of the activation (and its resumption), so publishing it
// twice is one message; t is stamped Published at at unless it was
// before.
func TaskMessage(job runtype.JobID, t Task, at time.Time) (store.Message, error) {
	if t.Published == 0 {
		t.Published = at.UnixNano()
	}
	payload, err := cbor.Marshal(t)
	if err != nil {
		return store.Message{}, err
	}
	return store.Message{ID: MessageID(job, t.Act+t.Resume), Stream: runtype.WorkStream, Job: job[:], Payload: payload}, nil
}

// FlowKeySep separates a flow's name from its definition hash in a
// task's Flow ("name#hash").
const FlowKeySep = "#"

// FlowKey splits t's Flow into the flow's name and its definition hash
// ("" when Flow names no definition).
func (t Task) FlowKey() (name, hash string) {
	name, hash, _ = strings.Cut(t.Flow, FlowKeySep)
	return name, hash
}

// FlowName is the name of a flow reference (name, name@version or
// name#hash).
func FlowName(ref string) string {
	name, _, _ := strings.Cut(ref, FlowKeySep)
	name, _, _ = strings.Cut(name, "@")
	return name
}

// DeadStream is the work stream's dead-letter stream: the messages no
// worker can take on.
const DeadStream = runtype.WorkStream + store.DeadLetterSuffix
