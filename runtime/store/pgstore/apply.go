package pgstore

import (
	"bytes"
	"errors"
	"fmt"
	"time"

	"github.com/lib/pq"

	"github.com/flowgen-dev/flowgen/runtime/store"
)

// opKind numbers the operations of flowgen_apply (migration 0002).
type opKind int64

const (
	opPut opKind = iota + 1
	opPutOnce
	opDelete
	opAdd
	opBump
	opCollate
	opEnqueue
	opFence
	opAck
	opNack
	opSettle
	opGet
	opCounter
)

// op is one operation of a batch, with the arguments flowgen_apply reads
// for its kind.
type op struct {
	kind     opKind
	k, k2, v []byte
	a, b, c  int64
	t, u     string
}

// answered reports whether flowgen_apply answers the operation with a row.
func (o op) answered() bool {
	switch o.kind {
	case opAdd, opCollate, opAck, opNack, opGet, opCounter:
		return true
	}
	return false
}

// batch holds a transaction's writes that no caller has waited for yet,
// in the order they were made, as flowgen_apply's column arrays, and how
// many rows it will answer.
type batch struct {
	op       pq.Int64Array
	k, k2, v pq.ByteaArray
	a, b, c  pq.Int64Array
	t, u     pq.StringArray
	answers  int
}

func (b *batch) add(o op) {
	b.op = append(b.op, int64(o.kind))
	b.k, b.k2, b.v = append(b.k, o.k), append(b.k2, o.k2), append(b.v, o.v)
	b.a, b.b, b.c = append(b.a, o.a), append(b.b, o.b), append(b.c, o.c)
	b.t, b.u = append(b.t, o.t), append(b.u, o.u)
	if o.answered() {
		b.answers++
	}
}

// reply is flowgen_apply's answer to one operation.
type reply struct {
	value   int64
	applied bool
	data    []byte
}

func (b *batch) reset() { *b = batch{} }

// mergeBump adds delta to the last queued operation on the counter key
// when that is a bump of the same sign and bound, and reports whether it
// did: two bumps of one sign leave [0, max] together exactly when one of
// them would, so the transaction fails or commits as it would have, and
// the counter's row is written once. A ledger's entry and its steps in
// one commit are one write this way. Writes queued before a savepoint
// have left the batch, so no unit merges into what it could not undo.
func (b *batch) mergeBump(key []byte, delta, max int64) bool {
	for i := len(b.op) - 1; i >= 0; i-- {
		if !bytes.Equal(b.k[i], key) && !bytes.Equal(b.k2[i], key) {
			continue
		}
		if opKind(b.op[i]) != opBump || b.b[i] != max || (b.a[i] < 0) != (delta < 0) {
			return false
		}
		b.a[i] += delta
		return true
	}
	return false
}

// Operation 7's c: the attempt and token a message is published with.
const (
	// reservedOnce publishes the message reserved by its holder
	// (EnqueueReserved).
	reservedOnce = 1
	// acknowledgedOnce publishes it reserved once and acknowledged, done
	// (migration 0007).
	acknowledgedOnce = -1
)

// settleUnsent turns the queued, unsent publication of a message reserved
// once into its publication acknowledged, when a settle of that
// reservation (token) follows it in the same batch, and reports whether it
// did: the row is written done at once, and is the row the publication
// and the settle would have left. A settle of any other message, or of a
// publication already sent, is queued as it is.
func (b *batch) settleUnsent(stream string, id [16]byte, token uint64) bool {
	if token != reservedOnce {
		return false
	}
	for i := len(b.op) - 1; i >= 0; i-- {
		if opKind(b.op[i]) == opEnqueue && b.c[i] == reservedOnce && b.t[i] == stream && bytes.Equal(b.k[i], id[:]) {
			b.c[i] = acknowledgedOnce
			return true
		}
	}
	return false
}

// readMany asks for values and counters with the queued writes, in the
// same round trip.
func (t *tx) readMany(keys, counters [][]byte) ([][]byte, []int64, error) {
	replies, err := t.ask(reads(keys, counters)...)
	if err != nil {
		return nil, nil, err
	}
	values, ns := answers(replies, keys, counters)
	return values, ns, nil
}

// reads are the operations that read keys and counters.
func reads(keys, counters [][]byte) []op {
	ops := make([]op, 0, len(keys)+len(counters))
	for _, k := range keys {
		ops = append(ops, op{kind: opGet, k: k})
	}
	for _, k := range counters {
		ops = append(ops, op{kind: opCounter, k: k})
	}
	return ops
}

// answers are the values and counters the replies to reads give.
func answers(replies []reply, keys, counters [][]byte) ([][]byte, []int64) {
	values, ns := make([][]byte, len(keys)), make([]int64, len(counters))
	for i := range keys {
		if r := replies[i]; r.applied {
			values[i] = nonNil(r.data)
		}
	}
	for i := range counters {
		ns[i] = replies[len(keys)+i].value
	}
	return values, ns
}

// args are flowgen_apply's arguments for the batch at now.
func (b *batch) args(now time.Time) []any {
	return []any{b.op, b.k, b.k2, b.v, b.a, b.b, b.c, b.t, b.u, now.UnixNano()}
}

// applySQL sends a batch; only answering operations return a row, in
// order.
const applySQL = `SELECT value, applied, data FROM flowgen_apply($1::smallint[], $2, $3, $4, $5, $6, $7, $8, $9, $10)`

// queue queues a write that needs no answer: it travels with the next
// operation that does, or with the commit. Its error, if any, is returned
// there and fails the transaction.
func (t *tx) queue(o op) error {
	if t.failed != nil {
		return t.failed
	}
	t.pending.add(o)
	return nil
}

// answer sends the queued writes with o, which needs an answer, in one
// round trip and returns o's answer.
func (t *tx) answer(o op) (value int64, applied bool, err error) {
	replies, err := t.ask(o)
	if err != nil {
		return 0, false, err
	}
	return replies[0].value, replies[0].applied, nil
}

// ask sends the queued writes with ops, which all need answers, in one
// round trip and returns their answers in order.
func (t *tx) ask(ops ...op) ([]reply, error) {
	if t.failed != nil {
		return nil, t.failed
	}
	for _, o := range ops {
		t.pending.add(o)
	}
	replies, err := t.send()
	if err != nil {
		return nil, err
	}
	return replies[len(replies)-len(ops):], nil
}

// flush sends the queued writes, if any, before a read or the commit, so
// the transaction reads its own writes.
func (t *tx) flush() error {
	if t.failed != nil {
		return t.failed
	}
	if len(t.pending.op) == 0 {
		return nil
	}
	_, err := t.send()
	return err
}

// send sends the batch and returns every answer in order.
func (t *tx) send() ([]reply, error) {
	b := &t.pending
	defer b.reset()
	rows, err := t.query(applySQL, b.args(t.now)...)
	if err != nil {
		t.failed = applyError(err)
		return nil, t.failed
	}
	defer rows.Close()
	replies := make([]reply, 0, b.answers)
	for rows.Next() {
		var r reply
		if err := rows.Scan(&r.value, &r.applied, &r.data); err != nil {
			return nil, err
		}
		replies = append(replies, r)
	}
	if err := rows.Err(); err != nil {
		t.failed = applyError(err)
		return nil, t.failed
	}
	if len(replies) != b.answers {
		return nil, fmt.Errorf("flowgen_apply: %d answers to %d questions", len(replies), b.answers)
	}
	return replies, nil
}

// applyError turns the SQLSTATEs flowgen_apply raises into the store's
// sentinels, keeping the server's message for context.
func applyError(err error) error {
	var pe *pq.Error
	if !errors.As(err, &pe) {
		return err
	}
	switch pe.Code {
	case "FGC01":
		return fmt.Errorf("%s: %w", pe.Message, store.ErrConflict)
	case "FGO01":
		return fmt.Errorf("%s: %w", pe.Message, store.ErrOverflow)
	case "FGF01":
		return fmt.Errorf("%s: %w", pe.Message, store.ErrFenced)
	}
	return err
}
