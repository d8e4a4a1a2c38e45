package boltstore

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/fxamacker/cbor/v2"

	"github.com/flowgen-dev/flowgen/runtime/store"
)

// record is a message as stored: its content and current delivery state.
type record struct {
	Job       []byte `cbor:"1,keyasint"`
	Payload   []byte `cbor:"2,keyasint"`
	VisibleAt int64  `cbor:"3,keyasint"` // unix nanoseconds
	Attempt   int    `cbor:"4,keyasint"`
	Token     uint64 `cbor:"5,keyasint"`
	Reason    string `cbor:"6,keyasint,omitempty"`
}

func msgKey(stream string, id [16]byte) []byte {
	k := make([]byte, 0, len(stream)+17)
	k = append(k, stream...)
	k = append(k, 0)
	return append(k, id[:]...)
}

func readyKey(stream string, visibleAt int64, id [16]byte) []byte {
	k := make([]byte, 0, len(stream)+25)
	k = append(k, stream...)
	k = append(k, 0)
	k = binary.BigEndian.AppendUint64(k, uint64(visibleAt))
	return append(k, id[:]...)
}

func (t *tx) loadRecord(stream string, id [16]byte) (record, bool, error) {
	if i := t.reserved.find(msgKey(stream, id)); i >= 0 {
		return t.reserved[i].r, true, nil
	}
	raw := t.get(bucketMsgs, msgKey(stream, id))
	if raw == nil {
		return record{}, false, nil
	}
	var r record
	if err := cbor.Unmarshal(raw, &r); err != nil {
		return record{}, false, fmt.Errorf("decode message %x: %w", id, err)
	}
	return r, true, nil
}

// putRecord stores r and indexes it as ready at r.VisibleAt.
func (t *tx) putRecord(stream string, id [16]byte, r record) error {
	raw, err := cbor.Marshal(r)
	if err != nil {
		return err
	}
	key := msgKey(stream, id)
	t.reserved.remove(key) // written now
	if err := t.b(bucketMsgs).Put(key, raw); err != nil {
		return err
	}
	return t.b(bucketReady).Put(readyKey(stream, r.VisibleAt, id), nil)
}

// unindex removes r from the ready index.
func (t *tx) unindex(stream string, id [16]byte, r record) error {
	return t.b(bucketReady).Delete(readyKey(stream, r.VisibleAt, id))
}

func (t *tx) Enqueue(m store.Message) error {
	if m.Stream == "" {
		return fmt.Errorf("enqueue: empty stream name")
	}
	t.published(m.Stream)
	key := msgKey(m.Stream, m.ID)
	if t.isPublished(key) {
		return nil // already published
	}
	at := m.NotBefore
	if at.IsZero() {
		at = t.now
	}
	return t.putRecord(m.Stream, m.ID, record{Job: m.Job, Payload: m.Payload, VisibleAt: at.UnixNano()})
}

func (t *tx) EnqueueReserved(m store.Message, owner string, visibility time.Duration) (store.Message, error) {
	if m.Stream == "" {
		return store.Message{}, fmt.Errorf("enqueue: empty stream name")
	}
	key := msgKey(m.Stream, m.ID)
	if t.isPublished(key) {
		return store.Message{}, fmt.Errorf("enqueue reserved: message %x on %s: already published: %w", m.ID, m.Stream, store.ErrConflict)
	}
	r := record{Job: m.Job, Payload: m.Payload, VisibleAt: t.now.Add(visibility).UnixNano(), Attempt: 1, Token: 1}
	t.reserved = append(t.reserved, unwrittenMessage{m.Stream, m.ID, key, r}) // written when the function returns, unless acknowledged first
	return message(m.Stream, m.ID, r), nil
}

// isPublished reports whether the message key names was published: it is
// stored, acknowledged, or published reserved in this transaction.
func (t *tx) isPublished(key []byte) bool {
	return t.reserved.find(key) >= 0 || t.get(bucketDone, key) != nil || t.get(bucketMsgs, key) != nil
}

// flushReserved writes the messages published reserved in this
// transaction and not acknowledged in it: before the function's writes
// commit, and before a scan of the ready index, which must find them.
func (t *tx) flushReserved() error {
	unwritten := t.reserved
	t.reserved = nil
	for _, u := range unwritten {
		if err := t.putRecord(u.stream, u.id, u.r); err != nil {
			return err
		}
	}
	return nil
}

// unwritten are a transaction's messages published reserved and not yet
// written, in publishing order: a commit publishes one or two.
type unwritten []unwrittenMessage

type unwrittenMessage struct {
	stream string
	id     [16]byte
	key    []byte // msgKey(stream, id)
	r      record
}

// find returns the index of the message key names, or -1.
func (u unwritten) find(key []byte) int {
	return slices.IndexFunc(u, func(m unwrittenMessage) bool { return bytes.Equal(m.key, key) })
}

// remove takes the message key names out, if it is there.
func (u *unwritten) remove(key []byte) {
	if i := u.find(key); i >= 0 {
		*u = slices.Delete(*u, i, i+1)
	}
}

func (t *tx) Reserve(claim store.Claim) ([]store.Message, error) {
	stream, owner, visibility, max := claim.Stream, claim.Owner, claim.Visibility, claim.Max
	if err := t.flushReserved(); err != nil {
		return nil, err
	}
	type found struct {
		id [16]byte
		r  record
	}
	var picked []found
	prefix := append([]byte(stream), 0)
	c := t.b(bucketReady).Cursor()
	for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix) && len(picked) < max; k, _ = c.Next() {
		if len(k) != len(prefix)+24 {
			continue
		}
		if int64(binary.BigEndian.Uint64(k[len(prefix):])) > t.now.UnixNano() {
			break // the rest become visible later
		}
		var id [16]byte
		copy(id[:], k[len(prefix)+8:])
		r, ok, err := t.loadRecord(stream, id)
		if err != nil {
			return nil, err
		}
		if !ok {
			return nil, fmt.Errorf("reserve: ready index names missing message %x", id)
		}
		if held, err := t.heldByOther(r.Job, owner); err != nil {
			return nil, err
		} else if held {
			continue
		}
		picked = append(picked, found{id, r})
	}
	if len(picked) == 0 {
		return nil, store.ErrEmpty
	}
	// The index changes only after the cursor is done with it.
	ms := make([]store.Message, 0, len(picked))
	for _, p := range picked {
		if err := t.unindex(stream, p.id, p.r); err != nil {
			return nil, err
		}
		p.r.Attempt++
		p.r.Token++
		p.r.VisibleAt = t.now.Add(visibility).UnixNano()
		if err := t.putRecord(stream, p.id, p.r); err != nil {
			return nil, err
		}
		ms = append(ms, message(stream, p.id, p.r))
	}
	store.SortByJob(ms)
	return ms, nil
}

// heldByOther reports whether another owner holds a live lease on job.
func (t *tx) heldByOther(job []byte, owner string) (bool, error) {
	if len(job) == 0 {
		return false, nil
	}
	l, ok, err := t.leaseRecord(job)
	if err != nil || !ok {
		return false, err
	}
	return l.Owner != owner && l.Expires > t.now.UnixNano(), nil
}

func message(stream string, id [16]byte, r record) store.Message {
	return store.Message{
		ID: id, Stream: stream, Job: r.Job, Payload: r.Payload,
		NotBefore: time.Unix(0, r.VisibleAt), Attempt: r.Attempt, Reason: r.Reason,
		Receipt: store.Receipt{ID: id, Stream: stream, Token: r.Token},
	}
}

// current loads the message a receipt names, failing with ErrStaleReceipt
// unless the receipt is its latest reservation.
func (t *tx) current(rc store.Receipt) (record, error) {
	r, ok, err := t.loadRecord(rc.Stream, rc.ID)
	if err != nil {
		return r, err
	}
	if !ok || r.Token != rc.Token {
		return r, stale(rc)
	}
	return r, nil
}

// stale is the error of an operation on a receipt that is not the
// message's latest reservation.
func stale(rc store.Receipt) error {
	return fmt.Errorf("message %x on %s: %w", rc.ID, rc.Stream, store.ErrStaleReceipt)
}

// recordHead is what an acknowledgement needs of a record: decoding only
// these fields skips the payload instead of copying it.
type recordHead struct {
	VisibleAt int64  `cbor:"3,keyasint"`
	Token     uint64 `cbor:"5,keyasint"`
}

func (t *tx) Ack(rc store.Receipt) error {
	key := msgKey(rc.Stream, rc.ID)
	if i := t.reserved.find(key); i >= 0 {
		if t.reserved[i].r.Token != rc.Token {
			return stale(rc)
		}
		t.reserved.remove(key) // never written: nothing to delete
		return t.b(bucketDone).Put(key, ackedAt(t.now))
	}
	raw := t.get(bucketMsgs, key)
	var h recordHead
	if raw != nil {
		if err := cbor.Unmarshal(raw, &h); err != nil {
			return fmt.Errorf("decode message %x: %w", rc.ID, err)
		}
	}
	if raw == nil || h.Token != rc.Token {
		return stale(rc)
	}
	if err := t.b(bucketReady).Delete(readyKey(rc.Stream, h.VisibleAt, rc.ID)); err != nil {
		return err
	}
	if err := t.b(bucketMsgs).Delete(key); err != nil {
		return err
	}
	return t.b(bucketDone).Put(key, ackedAt(t.now))
}

func (t *tx) Settle(rc store.Receipt) error {
	if err := t.Ack(rc); !errors.Is(err, store.ErrStaleReceipt) {
		return err
	}
	return nil
}

func (t *tx) Nack(rc store.Receipt, delay time.Duration) error {
	return t.requeue(rc, delay, 0)
}

func (t *tx) Return(rc store.Receipt, delay time.Duration) error {
	return t.requeue(rc, delay, 1)
}

// requeue makes the reserved message visible again after delay, with
// takeBack attempts taken back.
func (t *tx) requeue(rc store.Receipt, delay time.Duration, takeBack int) error {
	r, err := t.current(rc)
	if err != nil {
		return err
	}
	if err := t.unindex(rc.Stream, rc.ID, r); err != nil {
		return err
	}
	r.Token++ // the old receipt is spent
	r.Attempt = max(r.Attempt-takeBack, 0)
	r.VisibleAt = t.now.Add(delay).UnixNano()
	return t.putRecord(rc.Stream, rc.ID, r)
}

func (t *tx) Extend(rc store.Receipt, visibility time.Duration) error {
	if err := t.flushReserved(); err != nil {
		return err
	}
	r, err := t.current(rc)
	if err != nil {
		return err
	}
	if err := t.unindex(rc.Stream, rc.ID, r); err != nil {
		return err
	}
	r.VisibleAt = t.now.Add(visibility).UnixNano() // the token stays: rc is still the reservation
	return t.putRecord(rc.Stream, rc.ID, r)
}

func (t *tx) DeadLetter(rc store.Receipt, reason string) error {
	r, err := t.current(rc)
	if err != nil {
		return err
	}
	if err := t.Ack(rc); err != nil {
		return err
	}
	dead := rc.Stream + store.DeadLetterSuffix
	r.Reason, r.Token, r.VisibleAt = reason, 0, t.now.UnixNano()
	return t.putRecord(dead, rc.ID, r)
}

func (t *tx) Pending(stream string) ([]store.Message, error) {
	if err := t.flushReserved(); err != nil {
		return nil, err
	}
	prefix := append([]byte(stream), 0)
	var out []store.Message
	c := t.b(bucketReady).Cursor()
	for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
		if len(k) != len(prefix)+24 {
			continue // a longer stream name sharing the prefix
		}
		var id [16]byte
		copy(id[:], k[len(prefix)+8:])
		r, ok, err := t.loadRecord(stream, id)
		if err != nil {
			return nil, err
		}
		if ok {
			out = append(out, message(stream, id, r))
		}
	}
	return out, nil
}
