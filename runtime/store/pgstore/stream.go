package pgstore

import (
	"bytes"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/lib/pq"

	"github.com/flowgen-dev/flowgen/runtime/store"
)

func (t *tx) Enqueue(m store.Message) error {
	if m.Stream == "" {
		return errors.New("enqueue: empty stream name")
	}
	at := m.NotBefore
	if at.IsZero() {
		at = t.now
	}
	// A message published under the job's lease goes to the lease holder
	// first: other workers may take it only once that lease, as it is now,
	// has run out (see migration 2).
	var holder string
	open := at
	if l, ok := t.holding[string(m.Job)]; ok {
		holder = l.Owner
		if l.Expires.After(open) {
			open = l.Expires
		}
	}
	// flowgen_apply notifies listeners when the insert added a message that
	// is open to every worker now (not one kept for the lease holder);
	// they hear it when (and only if) the transaction commits, and
	// PostgreSQL folds identical notifications of one transaction.
	return t.queue(op{kind: opEnqueue, t: m.Stream, k: m.ID[:], k2: m.Job, v: nonNil(m.Payload),
		a: at.UnixNano(), u: holder, b: open.UnixNano()})
}

// EnqueueReserved publishes m reserved once by owner (migration 4): the
// holder is owner, and the message is invisible to everyone, owner too,
// until the reservation's visibility runs out. Nobody is told: nobody
// may take it now.
func (t *tx) EnqueueReserved(m store.Message, owner string, visibility time.Duration) (store.Message, error) {
	if m.Stream == "" {
		return store.Message{}, errors.New("enqueue: empty stream name")
	}
	until := t.now.Add(visibility).UnixNano()
	err := t.queue(op{kind: opEnqueue, t: m.Stream, k: m.ID[:], k2: m.Job, v: nonNil(m.Payload),
		a: until, u: owner, b: until, c: reservedOnce})
	if err != nil {
		return store.Message{}, err
	}
	m.Attempt, m.Reason, m.NotBefore = 1, "", time.Unix(0, until)
	m.Receipt = store.Receipt{ID: m.ID, Stream: m.Stream, Token: 1}
	return m, nil
}

// notifyChannel carries publish notifications; the payload is the stream.
const notifyChannel = "flowgen_messages"

func nonNil(b []byte) []byte {
	if b == nil {
		return []byte{}
	}
	return b
}

// reserveSQL claims up to $4 of the oldest visible messages published for
// this owner (its own jobs' next steps), then as many of the oldest ones
// open to everyone as that left room for, in either case only when no
// other owner holds the job's lease (flowgen_reserve, migration 5). It
// reads about as many rows as it takes, however much history the tables
// keep, locks the messages and writes nothing (see claims), and answers
// each job's lease, which the worker reads next.
const reserveSQL = `SELECT id, job, payload, visible_at, attempt, token, reason, lease_owner, lease_token, lease_expires
	FROM flowgen_reserve($1, $2, $3, $4)`

// claims are the reservations a transaction made and has not written yet.
// Reserve locks the messages it claims and returns them as reserved; the
// update that records a reservation (attempt, token, visibility, holder)
// waits here. A message acknowledged in the same transaction then goes
// from ready to done in one update and its reservation is never written:
// a folded delivery's message is updated once, not twice, with one new
// index entry instead of four. What waits is written in front of the
// commit, and in front of anything that reads or changes those messages
// (another Reserve, Nack, Return, DeadLetter, Pending, a lease release) or
// begins a savepoint, which could undo an acknowledgement that replaced a
// reservation. Meanwhile the rows stay locked: no other worker claims them,
// and none sees them before the commit, as with an update.
type claims struct {
	stream, owner string
	until         int64               // the reservations' visibility
	from          map[[16]byte]uint64 // message id -> its token before the reservation
}

// claimSQL writes the reservations of claims.
const claimSQL = `UPDATE flowgen_messages m SET visible_at = $3, open_at = $3, holder = $4, attempt = m.attempt + 1, token = m.token + 1
	WHERE m.stream = $1 AND m.id = ANY($2)`

// writeClaims puts the update of the reservations that wait in front of
// the transaction's next statement.
func (t *tx) writeClaims() error {
	c := t.claims
	t.claims = nil
	if c == nil || len(c.from) == 0 {
		return nil
	}
	ids := make(pq.ByteaArray, 0, len(c.from))
	for id := range c.from {
		ids = append(ids, id[:])
	}
	text, err := inline(claimSQL, []any{c.stream, ids, c.until, c.owner})
	if err != nil {
		return err
	}
	t.prefix = append(t.prefix, ahead{text: text})
	return nil
}

// flushMessages sends the reservations and the writes that wait, before
// a statement that reads or changes messages.
func (t *tx) flushMessages() error {
	if err := t.writeClaims(); err != nil {
		return err
	}
	return t.flush()
}

// acknowledging returns the token an acknowledgement of rc must find: the
// one before the reservation, which it replaces, while the reservation
// waits; rc's own once the reservation is written.
func (t *tx) acknowledging(rc store.Receipt) (uint64, error) {
	if c := t.claims; c != nil && c.stream == rc.Stream {
		if from, ok := c.from[rc.ID]; ok && from+1 == rc.Token {
			delete(c.from, rc.ID)
			return from, nil
		}
	}
	return rc.Token, t.writeClaims()
}

func (t *tx) Reserve(claim store.Claim) ([]store.Message, error) {
	stream, owner, visibility, max := claim.Stream, claim.Owner, claim.Visibility, claim.Max
	if err := t.flushMessages(); err != nil {
		return nil, err
	}
	rows, err := t.query(reserveSQL, stream, t.now.UnixNano(), owner, int64(max))
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	c := &claims{stream: stream, owner: owner, until: t.now.Add(visibility).UnixNano(), from: map[[16]byte]uint64{}}
	var ms []store.Message
	for rows.Next() {
		var l leaseRow
		m, err := scanMessage(stream, rows, &l.owner, &l.token, &l.expires)
		if err != nil {
			return nil, err
		}
		t.rememberLease(m.Job, l)
		c.from[m.ID] = m.Receipt.Token
		m.Attempt++
		m.Receipt.Token++
		m.NotBefore = time.Unix(0, c.until)
		ms = append(ms, m)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	if len(ms) == 0 {
		return nil, store.ErrEmpty
	}
	t.claims = c
	store.SortByJob(ms)
	return ms, nil
}

type scanner interface{ Scan(...any) error }

// scanMessage reads a message row, and more columns after it into more.
func scanMessage(stream string, row scanner, more ...any) (store.Message, error) {
	var id, job, payload []byte
	var visibleAt, token int64
	var attempt int
	var reason string
	if err := row.Scan(append([]any{&id, &job, &payload, &visibleAt, &attempt, &token, &reason}, more...)...); err != nil {
		return store.Message{}, err
	}
	m := store.Message{Stream: stream, Job: job, Payload: payload, NotBefore: time.Unix(0, visibleAt), Attempt: attempt, Reason: reason}
	copy(m.ID[:], id)
	m.Receipt = store.Receipt{ID: m.ID, Stream: stream, Token: uint64(token)}
	return m, nil
}

// stale is the error of an operation on a receipt that is not the
// message's latest reservation.
func stale(rc store.Receipt) error {
	return fmt.Errorf("message %x on %s: %w", rc.ID, rc.Stream, store.ErrStaleReceipt)
}

// current locks the message a receipt names, failing with ErrStaleReceipt
// (and changing nothing) unless the receipt is its latest reservation.
// Lookups by key say "done IS NOT TRUE", not "NOT done", so that no partial
// index of ready messages looks usable to the planner (migration 3).
func (t *tx) current(rc store.Receipt) (store.Message, error) {
	if err := t.flushMessages(); err != nil {
		return store.Message{}, err
	}
	row := t.queryRow(`SELECT id, job, payload, visible_at, attempt, token, reason
		FROM flowgen_messages WHERE stream = $1 AND id = $2 AND token = $3 AND done IS NOT TRUE FOR UPDATE`,
		rc.Stream, rc.ID[:], int64(rc.Token))
	m, err := scanMessage(rc.Stream, row)
	if errors.Is(err, sql.ErrNoRows) {
		return m, stale(rc)
	}
	return m, err
}

// onReceipt sends an operation on the message a receipt names with the
// queued writes; it fails with ErrStaleReceipt, changing nothing, unless
// the receipt is the latest reservation.
func (t *tx) onReceipt(o op, rc store.Receipt, token uint64) error {
	o.t, o.k, o.a = rc.Stream, rc.ID[:], int64(token)
	_, applied, err := t.answer(o)
	if err != nil {
		return err
	}
	if !applied {
		return stale(rc)
	}
	return nil
}

func (t *tx) Ack(rc store.Receipt) error {
	token, err := t.acknowledging(rc)
	if err != nil {
		return err
	}
	return t.onReceipt(op{kind: opAck}, rc, token)
}

func (t *tx) Settle(rc store.Receipt) error {
	token, err := t.acknowledging(rc)
	if err != nil {
		return err
	}
	if t.failed == nil && t.pending.settleUnsent(rc.Stream, rc.ID, token) {
		return nil
	}
	return t.queue(op{kind: opSettle, t: rc.Stream, k: rc.ID[:], a: int64(token)})
}

func (t *tx) Nack(rc store.Receipt, delay time.Duration) error {
	if err := t.writeClaims(); err != nil {
		return err
	}
	return t.onReceipt(op{kind: opNack, b: t.now.Add(delay).UnixNano()}, rc, rc.Token)
}

// returnSQL is nack with the reservation's attempt taken back.
const returnSQL = `UPDATE flowgen_messages m SET token = m.token + 1, visible_at = $4, open_at = $4, attempt = greatest(m.attempt - 1, 0)
	WHERE m.stream = $1 AND m.id = $2 AND m.token = $3 AND m.done IS NOT TRUE RETURNING 1`

func (t *tx) Return(rc store.Receipt, delay time.Duration) error {
	if err := t.flushMessages(); err != nil {
		return err
	}
	at := t.now.Add(delay).UnixNano()
	var one int
	err := t.queryRow(returnSQL, rc.Stream, rc.ID[:], int64(rc.Token), at).Scan(&one)
	if errors.Is(err, sql.ErrNoRows) {
		return stale(rc)
	}
	return err
}

// extendSQL keeps a reservation invisible longer; a message published
// for its owner opens to everyone no sooner than it did.
const extendSQL = `UPDATE flowgen_messages m SET visible_at = $4, open_at = greatest(m.open_at, $4)
	WHERE m.stream = $1 AND m.id = $2 AND m.token = $3 AND m.done IS NOT TRUE RETURNING 1`

func (t *tx) Extend(rc store.Receipt, visibility time.Duration) error {
	if err := t.flushMessages(); err != nil {
		return err
	}
	var one int
	err := t.queryRow(extendSQL, rc.Stream, rc.ID[:], int64(rc.Token), t.now.Add(visibility).UnixNano()).Scan(&one)
	if errors.Is(err, sql.ErrNoRows) {
		return stale(rc)
	}
	return err
}

func (t *tx) DeadLetter(rc store.Receipt, reason string) error {
	m, err := t.current(rc)
	if err != nil {
		return err
	}
	if err := t.Ack(rc); err != nil {
		return err
	}
	err = t.exec(`INSERT INTO flowgen_messages (stream, id, job, payload, visible_at, open_at, attempt, reason)
		VALUES ($1, $2, $3, $4, $5, $5, $6, $7) ON CONFLICT (stream, id) DO NOTHING`,
		rc.Stream+store.DeadLetterSuffix, rc.ID[:], m.Job, nonNil(m.Payload), t.now.UnixNano(), m.Attempt, reason)
	return err
}

func (t *tx) Pending(stream string) ([]store.Message, error) {
	if err := t.flushMessages(); err != nil {
		return nil, err
	}
	rows, err := t.query(`SELECT id, job, payload, visible_at, attempt, token, reason
		FROM flowgen_messages WHERE stream = $1 AND NOT done ORDER BY visible_at, id`, stream)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []store.Message
	for rows.Next() {
		m, err := scanMessage(stream, rows)
		if err != nil {
			return nil, err
		}
		out = append(out, m)
	}
	return out, rows.Err()
}

// leaseRow is a lease as stored; a null owner means no lease.
type leaseRow struct {
	owner          sql.NullString
	token, expires sql.NullInt64
}

func (r leaseRow) lease(job []byte) (store.Lease, bool) {
	if !r.owner.Valid {
		return store.Lease{}, false
	}
	return store.Lease{Job: bytes.Clone(job), Owner: r.owner.String, Token: uint64(r.token.Int64), Expires: time.Unix(0, r.expires.Int64)}, true
}

// rememberLease keeps a lease row read along with something else, so the
// Lease that follows in the transaction costs no round trip. Like any read
// at read committed, it shows a state committed when it was read.
func (t *tx) rememberLease(job []byte, r leaseRow) {
	if t.leases == nil {
		t.leases = map[string]leaseRow{}
	}
	t.leases[string(job)] = r
}

func (t *tx) readLease(job []byte) (leaseRow, error) {
	if err := t.flush(); err != nil {
		return leaseRow{}, err
	}
	var r leaseRow
	err := t.queryRow(`SELECT owner, token, expires FROM flowgen_leases WHERE job = $1`, job).
		Scan(&r.owner, &r.token, &r.expires)
	if errors.Is(err, sql.ErrNoRows) {
		return leaseRow{}, nil
	}
	return r, err
}

func (t *tx) Lease(job []byte) (store.Lease, error) {
	r, known := t.leases[string(job)]
	if !known {
		var err error
		if r, err = t.readLease(job); err != nil {
			return store.Lease{}, err
		}
	}
	l, found := r.lease(job)
	if !found {
		return store.Lease{}, fmt.Errorf("lease of %x: %w", job, store.ErrNotFound)
	}
	return l, nil
}

// acquireSQL takes or renews a lease in one statement: the update applies
// only when the lease is free, expired or already ours; a new tenure gets
// a higher token, a renewal keeps it.
const acquireSQL = `
INSERT INTO flowgen_leases AS l (job, owner, token, expires) VALUES ($1, $2, 1, $4)
ON CONFLICT (job) DO UPDATE SET
	token = CASE WHEN l.owner = $2 AND l.expires > $3 THEN l.token ELSE l.token + 1 END,
	owner = $2, expires = $4
WHERE l.owner = $2 OR l.expires <= $3
RETURNING token`

func (t *tx) AcquireLease(job []byte, owner string, ttl time.Duration) (store.Lease, error) {
	if err := t.flush(); err != nil {
		return store.Lease{}, err
	}
	exp := t.now.Add(ttl).UnixNano()
	var token int64
	err := t.queryRow(acquireSQL, job, owner, t.now.UnixNano(), exp).Scan(&token)
	delete(t.leases, string(job))
	if errors.Is(err, sql.ErrNoRows) {
		holder, _ := t.readLease(job)
		return store.Lease{}, fmt.Errorf("lease of %x held by %s: %w", job, holder.owner.String, store.ErrLeaseHeld)
	}
	if err != nil {
		return store.Lease{}, err
	}
	l := store.Lease{Job: bytes.Clone(job), Owner: owner, Token: uint64(token), Expires: time.Unix(0, exp)}
	t.hold(l)
	t.rememberLease(job, leaseRow{owner: sql.NullString{String: owner, Valid: true},
		token: sql.NullInt64{Int64: token, Valid: true}, expires: sql.NullInt64{Int64: exp, Valid: true}})
	return l, nil
}

// Fence travels with the next operation or the commit; flowgen_apply
// takes a share lock on the lease row, so no acquisition can slip in
// between the check and the commit.
func (t *tx) Fence(want store.Lease) error {
	t.hold(want)
	return t.queue(op{kind: opFence, k: want.Job, t: want.Owner, a: int64(want.Token)})
}

// releaseSQL ends a lease only while it is current (a superseded one has
// nothing to release) and opens the messages published under it to every
// worker at once, instead of when the lease would have run out.
const releaseSQL = `
WITH released AS (
	UPDATE flowgen_leases SET expires = 0 WHERE job = $1 AND owner = $2 AND token = $3 AND expires > $4
	RETURNING job
)
UPDATE flowgen_messages m SET open_at = m.visible_at
FROM released WHERE m.job = released.job AND m.holder = $2 AND NOT m.done AND m.open_at > m.visible_at`

func (t *tx) ReleaseLease(want store.Lease) error {
	if err := t.flushMessages(); err != nil {
		return err
	}
	delete(t.leases, string(want.Job))
	delete(t.holding, string(want.Job))
	return t.exec(releaseSQL, want.Job, want.Owner, int64(want.Token), t.now.UnixNano())
}
