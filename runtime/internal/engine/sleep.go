package engine

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/fxamacker/cbor/v2"

	"github.com/flowgen-dev/flowgen/flowtype"
	"github.com/flowgen-dev/flowgen/runtime/internal/protocol"
	"github.com/flowgen-dev/flowgen/runtime/runtype"
	"github.com/flowgen-dev/flowgen/runtime/store"
)

// A sleep node is a durable timer built on parking. Its first delivery
// parks the activation (wait/<act>, holding no worker) and, in the same
// commit, publishes the message that wakes it with the store's visibility
// set to the wake time, so the timer survives restarts and fires on any
// worker. The waking message (Resume "timer") completes the activation
// with its input unchanged. A kill resumes the parked activation at once,
// and it finishes canceled; the timer's message, when it comes, finds the
// activation done and is acknowledged (superseded).

// timerResume marks the message that wakes a sleeping activation.
const timerResume = "timer"

// errSleeping ends the first delivery of a sleep node: step parks it and
// sets its timer (en.wake).
var errSleeping = errors.New("sleeping")

// sleep is the sleep node's work.
func (p *processor) sleep(ctx context.Context, en *entry, s *runtype.Sleep) (result, error) {
	t := en.t
	if t.Resume != timerResume {
		wake, err := wakeTime(s, t.Input, p.now())
		if err != nil {
			return result{ErrKind: runtype.FailureOf(flowtype.SchemaMismatch), Err: err.Error(), Attempts: 1}, nil
		}
		en.wake = wake
		return result{}, errSleeping
	}
	if early := time.Unix(0, t.Wake).Sub(p.now()); early > 0 {
		// Delivered before its time (another worker's clock runs ahead):
		// back to the stream until then, with no attempt spent.
		en.later = &laterAttempt{delay: early}
		return result{}, errRetryLater
	}
	return result{Output: t.Input, Port: "out", Attempts: 1}, nil
}

// wakeTime is when a sleep delivered now with input wakes.
func wakeTime(s *runtype.Sleep, input []byte, now time.Time) (time.Time, error) {
	if s.Until == "" {
		return now.Add(s.For), nil
	}
	raw, err := lookup(input, s.Until)
	if err != nil {
		return time.Time{}, fmt.Errorf("sleep until %s: %w", s.Until, err)
	}
	var at time.Time
	if err := at.UnmarshalJSON(raw); err != nil {
		return time.Time{}, fmt.Errorf("sleep until %s: want an RFC 3339 time, got %s", s.Until, raw)
	}
	return at, nil
}

// setTimer, in the parking commit, marks the parked task as a sleep (its
// Wake set, so that no signal resumes it) and publishes the message that
// wakes it at en.wake.
func (pw *protocolWriter) setTimer(tx store.Tx, en *entry) error {
	t := en.t
	t.Wake = en.wake.UnixNano()
	parked, err := cbor.Marshal(t)
	if err != nil {
		return err
	}
	if err := tx.Put(protocol.WaitKey(en.job, t.Act), parked); err != nil {
		return err
	}
	t.Resume = timerResume
	m, err := protocol.TaskMessage(en.job, t, pw.now())
	if err != nil {
		return err
	}
	m.NotBefore = en.wake
	return tx.Enqueue(m)
}
