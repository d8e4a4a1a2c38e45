package maintenance

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/fxamacker/cbor/v2"

	"github.com/flowgen-dev/flowgen/runtime/internal/protocol"
	"github.com/flowgen-dev/flowgen/runtime/runtype"
	"github.com/flowgen-dev/flowgen/runtime/store"
)

// The dead-letter stream holds the messages no worker can take on: a task
// that does not decode, a flow no worker of the store has. (An activation
// that can never make progress fails as Exhausted instead, so that its job
// goes on.) Each stays there, its job waiting, until an operator requeues
// or fails it; both put a new message on the work stream, which goes
// through the step protocol like any other delivery.

// DeadLetters lists the dead letters of the work stream on s, oldest
// first.
func DeadLetters(ctx context.Context, s store.Store) ([]runtype.DeadLetter, error) {
	var out []runtype.DeadLetter
	err := s.View(ctx, func(tx store.ReadTx) error {
		ms, err := tx.Pending(protocol.DeadStream)
		out = make([]runtype.DeadLetter, 0, len(ms))
		for _, m := range ms {
			out = append(out, deadLetterView(m))
		}
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("dead letters: %w", err)
	}
	return out, nil
}

// deadLetterView is what an operator sees of dead letter m.
func deadLetterView(m store.Message) runtype.DeadLetter {
	d := runtype.DeadLetter{ID: m.ID, Attempts: m.Attempt, Reason: m.Reason, At: m.NotBefore}
	copy(d.Job[:], m.Job)
	if h, err := protocol.ReadHeader(m.Payload); err == nil {
		flow, hash := protocol.SplitFlowKey(h.Flow)
		d.Act, d.Flow, d.Definition, d.Node = h.Act, flow, hash, h.Node
		if json.Valid(h.Input) {
			d.Input = h.Input
		}
	}
	return d
}

// taken is what an operator did with a dead letter (dlq/<msg>).
type taken struct {
	Action runtype.DeadLetterAction `json:"action"`
	// Message is the message that carries the activation on.
	Message string `json:"message"`
	Reason  string `json:"reason,omitempty"`
}

// TakeDeadLetter does action to dead letter id on s, in one commit: the
// dead letter goes, and a new message of its activation goes on the work
// stream (with a fresh delivery budget; to fail the activation as
// DeadLettered with reason, for runtype.Fail). It returns that message's
// id. Taking a dead letter again with the same action returns the same id
// and changes nothing; with the other action it fails with
// runtype.ErrDeadLetterTaken. ErrNotFound when there is no such dead
// letter, runtype.ErrUndecodable when failing one whose task does not
// decode.
func TakeDeadLetter(ctx context.Context, s store.Store, id runtype.MessageID, action runtype.DeadLetterAction, reason string) (runtype.MessageID, error) {
	if action != runtype.Requeue && action != runtype.Fail {
		return runtype.MessageID{}, fmt.Errorf("dead letter %s: unknown action %q", id, action)
	}
	if action == runtype.Fail && reason == "" {
		reason = "failed by an operator"
	}
	var next runtype.MessageID
	take := func(tx store.Tx) error {
		var was taken
		if found, err := protocol.GetJSON(tx, protocol.DeadLetterKey(id), &was); err != nil {
			return err
		} else if found {
			return alreadyTaken(was, action, &next)
		}
		ms, err := tx.Pending(protocol.DeadStream)
		if err != nil {
			return err
		}
		for _, m := range ms {
			if m.ID == id {
				next, err = revive(tx, m, action, reason)
				return err
			}
		}
		return store.ErrNotFound
	}
	err := s.Update(ctx, take)
	if errors.Is(err, store.ErrStaleReceipt) { // another operator took it first
		err = s.Update(ctx, take)
	}
	if err != nil {
		return runtype.MessageID{}, fmt.Errorf("%s dead letter %s: %w", action, id, err)
	}
	return next, nil
}

// alreadyTaken answers a second take of a dead letter from what the first
// recorded.
func alreadyTaken(was taken, action runtype.DeadLetterAction, next *runtype.MessageID) error {
	if was.Action != action {
		return fmt.Errorf("%w: it was %s as message %s", runtype.ErrDeadLetterTaken, map[runtype.DeadLetterAction]string{runtype.Requeue: "requeued", runtype.Fail: "failed"}[was.Action], was.Message)
	}
	id, err := runtype.ParseMessageID(was.Message)
	*next = id
	return err
}

// revive settles dead letter m and publishes its activation again under
// a new id, recording what was done.
func revive(tx store.Tx, m store.Message, action runtype.DeadLetterAction, reason string) (runtype.MessageID, error) {
	payload := m.Payload
	if action == runtype.Fail {
		var t protocol.Task
		if err := cbor.Unmarshal(payload, &t); err != nil {
			return runtype.MessageID{}, fmt.Errorf("%w: %v; kill its job instead", runtype.ErrUndecodable, err)
		}
		t.Failed = reason
		var err error
		if payload, err = cbor.Marshal(t); err != nil {
			return runtype.MessageID{}, err
		}
	} else {
		reason = ""
	}
	if err := tx.Ack(m.Receipt); err != nil {
		return runtype.MessageID{}, err
	}
	var job runtype.JobID
	copy(job[:], m.Job)
	next := runtype.MessageID(protocol.MessageID(job, "dlq/"+hex.EncodeToString(m.ID[:])))
	if err := tx.Enqueue(store.Message{ID: next, Stream: runtype.WorkStream, Job: m.Job, Payload: payload}); err != nil {
		return runtype.MessageID{}, err
	}
	return next, protocol.PutJSON(tx, protocol.DeadLetterKey(m.ID), taken{Action: action, Message: next.String(), Reason: reason})
}
