package protocol

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/fxamacker/cbor/v2"

	"github.com/flowgen-dev/flowgen/flowtype"
	"github.com/flowgen-dev/flowgen/runtime/runtype"
	"github.com/flowgen-dev/flowgen/runtime/store"
)

// Kind is what a task's activation does. The engine branches on it,
// never on which fields are set: each kind's own fields are in its
// payload, nil on every other kind.
type Kind uint8

// The kinds of task.
const (
	// Entry runs an entry node, started with its job.
	Entry Kind = iota + 1
	// Step runs a node reached over an edge (loop passes included).
	Step
	// Body runs a forEach's body for one element (Task.Element).
	Body
	// Join aggregates a forEach once all its elements finished
	// (Task.Aggregate).
	Join
	// Undo runs the compensation of a completed activation
	// (Task.Compensation).
	Undo
)

var kindNames = [...]string{Entry: "entry", Step: "step", Body: "body", Join: "join", Undo: "undo"}

// String names k.
func (k Kind) String() string {
	if int(k) < len(kindNames) && kindNames[k] != "" {
		return kindNames[k]
	}
	return "Kind(" + strconv.Itoa(int(k)) + ")"
}

// Task is one activation to run, the payload of a work message: what
// every activation has, its kind, and that kind's payload.
type Task struct {
	Kind Kind
	// Flow is the flow key of the definition the job runs on
	// ("name#hash"), Node the node, Act the activation id's text and Dim
	// its dimension.
	Flow string
	Node string
	Act  string
	Dim  runtype.Dim
	// Input is the activation's input, or InputRef, when it was too large
	// to travel inline, the sha256 of the input stored under blobs/.
	Input    []byte
	InputRef string
	// Delivery and DedupeTTL come from the edge the activation arrived
	// on, Via is that edge ("from.port"; the forEach for a body; none for
	// an entry node) and Partition its partition key path: the
	// idempotency scope of the node's connector composes them into its
	// key (runtype.KeyNode).
	Delivery  flowtype.Delivery
	DedupeTTL time.Duration
	Via       string
	Partition string
	// Resume distinguishes the message that resumes a parked activation
	// (after a signal or a kill) from the one that parked it.
	Resume string
	// Refused is set on an activation the router may not run (a loop past
	// its MaxIterations, a spent budget): the processor fails it with
	// PolicyDenied and this reason instead of running it.
	Refused string
	// Failed is set on a dead letter an operator failed: the processor
	// fails the activation as DeadLettered with this reason instead of
	// running it, and the job goes on by its error policy.
	Failed string
	// MaxActivations and Deadline (Unix nanoseconds) are the job's
	// budget, carried by every task so it is enforced without reading the
	// meta.
	MaxActivations int64
	Deadline       int64
	// Wake is set on a sleeping activation's parked task and on the
	// message that wakes it (Resume "timer"): when, in Unix nanoseconds.
	Wake int64
	// Started is when the job started, in Unix nanoseconds, carried by
	// the tasks of a job with no parent so that the step that closes the
	// job can encode its final status before its commit (a subflow's job
	// reports to its parent and carries none, nor do tasks published
	// before it existed).
	Started int64
	// Published is when the activation was first published, in Unix
	// nanoseconds: its logical time (Call.At), the same on every attempt
	// and replay (none on tasks published before it existed: their
	// logical time is their job's start, or the attempt's).
	Published int64

	// Element is a Body's place in its fan-out.
	Element *Element
	// Aggregate is a Join's fan-out.
	Aggregate *Aggregate
	// Compensation is an Undo's place in its compensation chain.
	Compensation *Compensation
}

// Element is a forEach body's place in its fan-out.
type Element struct {
	// ForEach is the forEach activation the body reports to, Index its
	// element and Expect the fan-out's size.
	ForEach string
	Index   int
	Expect  int
	// Window is the forEach's concurrency limit (0: none): finishing
	// starts element Window+finished-1.
	Window int
	// Grouped says the fan-out's bodies hold no count on the job
	// semaphore between them: the forEach's count stays with the group
	// and passes to the join, so no body's commit locks the semaphore.
	// Bodies published before it existed hold a count each, and the
	// bodies they start do too.
	Grouped bool
}

// Aggregate is the fan-out a join aggregates.
type Aggregate struct {
	// ForEach is the forEach activation, Expect its fan-out's size (none
	// on joins published before it was carried: the forEach's counter
	// has it).
	ForEach string
	Expect  int
}

// Compensation is an undo's place in its job's compensation chain.
type Compensation struct {
	// Step is the undo's position (1-based) in a chain of Of.
	Step, Of int
	// Round numbers the resumptions of a compensation parked under
	// CompensatePark, so that each is a message of its own.
	Round int
}

// Grouped reports whether t is a body of a grouped fan-out (Element).
func (t Task) Grouped() bool { return t.Kind == Body && t.Element.Grouped }

// MarshalCBOR encodes t in its wire form.
func (t Task) MarshalCBOR() ([]byte, error) { return cbor.Marshal(t.wire()) }

// UnmarshalCBOR decodes t from its wire form. A task whose kind cannot be
// told is refused.
func (t *Task) UnmarshalCBOR(b []byte) error {
	var w wireTask
	if err := cbor.Unmarshal(b, &w); err != nil {
		return err
	}
	typed, err := w.task()
	if err != nil {
		return err
	}
	*t = typed
	return nil
}

// Header is what a work message says of its activation whatever its
// kind.
type Header struct {
	Flow, Node, Act string
	Input           []byte
}

// ReadHeader reads the header of a work message's task, also from one
// whose task is not valid as a whole (a poison message among the dead
// letters, say).
func ReadHeader(payload []byte) (Header, error) {
	var w wireTask
	if err := cbor.Unmarshal(payload, &w); err != nil {
		return Header{}, err
	}
	return Header{Flow: w.Flow, Node: w.Node, Act: w.Act, Input: w.Input}, nil
}

func (t Task) wire() wireTask {
	w := wireTask{Flow: t.Flow, Node: t.Node, Act: t.Act, Dim: t.Dim, Input: t.Input, InputRef: t.InputRef,
		Delivery: t.Delivery, DedupeTTL: t.DedupeTTL, Via: t.Via, Partition: t.Partition,
		Resume: t.Resume, Refused: t.Refused, Failed: t.Failed, MaxActivations: t.MaxActivations, Deadline: t.Deadline,
		Wake: t.Wake, Started: t.Started, Published: t.Published}
	switch t.Kind {
	case Entry:
		w.Kind = runtype.Entry
	case Step:
		w.Kind = runtype.Step
	case Body:
		e := t.Element
		w.Kind, w.Join, w.Index, w.Expect, w.Window, w.Grouped = runtype.Step, e.ForEach, e.Index, e.Expect, e.Window, e.Grouped
	case Join:
		w.Kind, w.JoinOf, w.Expect = runtype.Join, t.Aggregate.ForEach, t.Aggregate.Expect
	case Undo:
		c := t.Compensation
		w.Kind, w.Undo, w.UndoOf, w.Round = runtype.Undo, c.Step, c.Of, c.Round
	}
	return w
}

func (w wireTask) task() (Task, error) {
	t := Task{Flow: w.Flow, Node: w.Node, Act: w.Act, Dim: w.Dim, Input: w.Input, InputRef: w.InputRef,
		Delivery: w.Delivery, DedupeTTL: w.DedupeTTL, Via: w.Via, Partition: w.Partition,
		Resume: w.Resume, Refused: w.Refused, Failed: w.Failed, MaxActivations: w.MaxActivations, Deadline: w.Deadline,
		Wake: w.Wake, Started: w.Started, Published: w.Published}
	kind := w.Kind
	if kind == 0 { // format 1, published before tasks carried their kind
		id, err := runtype.Parse(w.Act)
		if err != nil {
			return Task{}, err
		}
		kind = id.Kind()
	}
	switch kind {
	case runtype.Entry:
		t.Kind = Entry
	case runtype.Step:
		t.Kind = Step
		if w.Join != "" {
			t.Kind = Body
			t.Element = &Element{ForEach: w.Join, Index: w.Index, Expect: w.Expect, Window: w.Window, Grouped: w.Grouped}
		}
	case runtype.Join:
		t.Kind, t.Aggregate = Join, &Aggregate{ForEach: w.JoinOf, Expect: w.Expect}
	case runtype.Undo:
		t.Kind, t.Compensation = Undo, &Compensation{Step: w.Undo, Of: w.UndoOf, Round: w.Round}
	default:
		return Task{}, fmt.Errorf("task %q: unknown kind %d", w.Act, kind)
	}
	return t, nil
}

// wireTask is a Task as a work message carries it: CBOR with integer
// keys, fixed by the format version (a field's key is never reused), the
// payloads of every kind side by side. Format 1: Kind is the activation
// id's kind (a forEach body is a step with Join set), and messages
// published before Kind existed have none, which is derived from Act.
type wireTask struct {
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
func (t Task) FlowKey() (name, hash string) { return SplitFlowKey(t.Flow) }

// SplitFlowKey splits a flow key ("name#hash") into the flow's name and
// its definition hash ("" when it names no definition).
func SplitFlowKey(key string) (name, hash string) {
	name, hash, _ = strings.Cut(key, FlowKeySep)
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
