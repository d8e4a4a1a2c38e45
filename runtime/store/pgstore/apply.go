package pgstore

import (
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
)

// op is one operation of a batch, with the arguments flowgen_apply reads
// for its kind.
type op struct {
	kind      opKind
	k, k2, v  []byte
	a, b, c   int64
	t         string
	answering bool // the caller waits for this operation's answer
}

// batch holds a transaction's writes that no caller has waited for yet,
// in the order they were made, as flowgen_apply's column arrays.
type batch struct {
	op        pq.Int64Array
	k, k2, v  pq.ByteaArray
	a, b, c   pq.Int64Array
	t         pq.StringArray
	answering bool
}

func (b *batch) add(o op) {
	b.op = append(b.op, int64(o.kind))
	b.k, b.k2, b.v = append(b.k, o.k), append(b.k2, o.k2), append(b.v, o.v)
	b.a, b.b, b.c = append(b.a, o.a), append(b.b, o.b), append(b.c, o.c)
	b.t = append(b.t, o.t)
	b.answering = o.answering
}

func (b *batch) reset() { *b = batch{} }

// args are flowgen_apply's arguments for the batch at now.
func (b *batch) args(now time.Time) []any {
	return []any{b.op, b.k, b.k2, b.v, b.a, b.b, b.c, b.t, now.UnixNano()}
}

// applySQL sends a batch; only answering operations return a row.
const applySQL = `SELECT value, applied FROM flowgen_apply($1::smallint[], $2, $3, $4, $5, $6, $7, $8, $9)`

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
	if t.failed != nil {
		return 0, false, t.failed
	}
	o.answering = true
	t.pending.add(o)
	return t.send()
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
	_, _, err := t.send()
	return err
}

func (t *tx) send() (value int64, applied bool, err error) {
	b := &t.pending
	defer b.reset()
	rows, err := t.query(applySQL, b.args(t.now)...)
	if err != nil {
		t.failed = applyError(err)
		return 0, false, t.failed
	}
	defer rows.Close()
	answered := false
	for rows.Next() {
		if err := rows.Scan(&value, &applied); err != nil {
			return 0, false, err
		}
		answered = true
	}
	if err := rows.Err(); err != nil {
		t.failed = applyError(err)
		return 0, false, t.failed
	}
	if b.answering && !answered {
		return 0, false, errors.New("flowgen_apply: no answer to the last operation")
	}
	return value, applied, nil
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
