package runtype

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// MessageID names one message of a stream. Outside the store it is
// written in base64url, as job ids are.
type MessageID [16]byte

// ParseMessageID parses the base64url form String prints.
func ParseMessageID(s string) (MessageID, error) {
	var id MessageID
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil || len(b) != len(id) {
		return id, fmt.Errorf("invalid message id %q: want 22 base64url characters", s)
	}
	copy(id[:], b)
	return id, nil
}

// String is the id in base64url.
func (m MessageID) String() string { return base64.RawURLEncoding.EncodeToString(m[:]) }

// DeadLetter is a message of the work stream's dead-letter stream, as an
// operator sees it: a message no worker can take on (its task does not
// decode, or no worker of the store has its flow), which stays there
// until it is requeued or failed.
type DeadLetter struct {
	ID  MessageID `json:"-"`
	Job JobID     `json:"-"`
	// Act, Flow and Node name the activation the message delivers; empty
	// when its task does not decode.
	Act  string `json:"act,omitempty"`
	Flow string `json:"flow,omitempty"`
	Node string `json:"node,omitempty"`
	// Definition is the flow definition's short content hash (see
	// FlowVersion.Hash): the job runs on that definition only.
	Definition string `json:"definition,omitempty"`
	// Attempts is how many times the message was delivered before.
	Attempts int    `json:"attempts"`
	Reason   string `json:"reason"`
	// At is when the message was dead-lettered.
	At time.Time `json:"at"`
	// Input is the activation's input (inline inputs only).
	Input json.RawMessage `json:"input,omitempty"`
}

// MarshalJSON writes the ids in their base64url form.
func (d DeadLetter) MarshalJSON() ([]byte, error) {
	type plain DeadLetter // without the method
	return json.Marshal(struct {
		ID  string `json:"id"`
		Job string `json:"job"`
		plain
	}{d.ID.String(), d.Job.String(), plain(d)})
}

// UnmarshalJSON reads what MarshalJSON writes.
func (d *DeadLetter) UnmarshalJSON(b []byte) error {
	type plain DeadLetter
	var v struct {
		ID  string `json:"id"`
		Job string `json:"job"`
		plain
	}
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	id, err := ParseMessageID(v.ID)
	if err != nil {
		return err
	}
	job, err := ParseJobID(v.Job)
	if err != nil {
		return err
	}
	*d = DeadLetter(v.plain)
	d.ID, d.Job = id, job
	return nil
}

// DeadLetterAction is what an operator does with a dead letter.
type DeadLetterAction string

// The actions on a dead letter.
const (
	// Requeue puts the message back on the work stream as a new message
	// with a fresh delivery budget, through the step protocol like any
	// other delivery.
	Requeue DeadLetterAction = "requeue"
	// Fail puts it back to fail its activation as DeadLettered, so that its
	// job goes on by its error policy (compensating, if it fails).
	Fail DeadLetterAction = "fail"
)

// ErrDeadLetterTaken: the dead letter was already requeued or failed by
// another action than the one asked for.
var ErrDeadLetterTaken = errors.New("dead letter already taken")

// ErrUndecodable: a dead letter whose task does not decode cannot be
// failed through its activation (the job can be killed instead).
var ErrUndecodable = errors.New("task does not decode")
