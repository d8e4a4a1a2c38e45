package pgstore

import (
	"bytes"
	"database/sql"
	"errors"
	"fmt"
	"time"

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
	// One round trip: the insert, and a notification when it added a
	// message that is visible now. Listeners get it when (and only if)
	// the transaction commits; PostgreSQL folds identical notifications of
	// one transaction.
	_, err := t.exec(`WITH ins AS (
		INSERT INTO flowgen_messages (stream, id, job, payload, visible_at)
		VALUES ($1, $2, $3, $4, $5) ON CONFLICT (stream, id) DO NOTHING RETURNING 1
	) SELECT pg_notify($6, $1) FROM ins WHERE $7`,
		m.Stream, m.ID[:], m.Job, nonNil(m.Payload), at.UnixNano(), notifyChannel, !at.After(t.now))
	return err
}

// notifyChannel carries publish notifications; the payload is the stream.
const notifyChannel = "flowgen_messages"

func nonNil(b []byte) []byte {
	if b == nil {
		return []byte{}
	}
	return b
}

// reserveSQL claims the oldest visible message whose job no other owner
// holds; SKIP LOCKED lets workers claim different messages concurrently
// instead of queueing on one row.
const reserveSQL = `
UPDATE flowgen_messages m SET visible_at = $3, attempt = m.attempt + 1, token = m.token + 1
FROM (
	SELECT stream, id FROM flowgen_messages f
	WHERE stream = $1 AND NOT done AND visible_at <= $2
	AND NOT EXISTS (SELECT 1 FROM flowgen_leases l WHERE l.job = f.job AND l.owner <> $4 AND l.expires > $2)
	ORDER BY visible_at, id LIMIT 1
	FOR UPDATE SKIP LOCKED
) pick
WHERE m.stream = pick.stream AND m.id = pick.id
RETURNING m.id, m.job, m.payload, m.visible_at, m.attempt, m.token, m.reason`

func (t *tx) Reserve(stream, owner string, visibility time.Duration) (store.Message, error) {
	row := t.tx.QueryRowContext(t.ctx, reserveSQL, stream, t.now.UnixNano(), t.now.Add(visibility).UnixNano(), owner)
	m, err := scanMessage(stream, row)
	if errors.Is(err, sql.ErrNoRows) {
		return store.Message{}, store.ErrEmpty
	}
	return m, err
}

type scanner interface{ Scan(...any) error }

func scanMessage(stream string, row scanner) (store.Message, error) {
	var id, job, payload []byte
	var visibleAt, token int64
	var attempt int
	var reason string
	if err := row.Scan(&id, &job, &payload, &visibleAt, &attempt, &token, &reason); err != nil {
		return store.Message{}, err
	}
	m := store.Message{Stream: stream, Job: job, Payload: payload, NotBefore: time.Unix(0, visibleAt), Attempt: attempt, Reason: reason}
	copy(m.ID[:], id)
	m.Receipt = store.Receipt{ID: m.ID, Stream: stream, Token: uint64(token)}
	return m, nil
}

// current locks the message a receipt names, failing with ErrStaleReceipt
// (and changing nothing) unless the receipt is its latest reservation.
func (t *tx) current(rc store.Receipt) (store.Message, error) {
	row := t.tx.QueryRowContext(t.ctx, `SELECT id, job, payload, visible_at, attempt, token, reason
		FROM flowgen_messages WHERE stream = $1 AND id = $2 AND token = $3 AND NOT done FOR UPDATE`,
		rc.Stream, rc.ID[:], int64(rc.Token))
	m, err := scanMessage(rc.Stream, row)
	if errors.Is(err, sql.ErrNoRows) {
		return m, fmt.Errorf("message %x on %s: %w", rc.ID, rc.Stream, store.ErrStaleReceipt)
	}
	return m, err
}

// onReceipt runs an update of the message a receipt names, in one
// statement; it fails with ErrStaleReceipt, changing nothing, unless the
// receipt is the latest reservation.
func (t *tx) onReceipt(rc store.Receipt, set string, args ...any) error {
	res, err := t.exec(`UPDATE flowgen_messages SET `+set+` WHERE stream = $1 AND id = $2 AND token = $3 AND NOT done`,
		append([]any{rc.Stream, rc.ID[:], int64(rc.Token)}, args...)...)
	if err != nil {
		return err
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("message %x on %s: %w", rc.ID, rc.Stream, store.ErrStaleReceipt)
	}
	return nil
}

func (t *tx) Ack(rc store.Receipt) error {
	return t.onReceipt(rc, `done = true, payload = NULL`)
}

func (t *tx) Nack(rc store.Receipt, delay time.Duration) error {
	return t.onReceipt(rc, `token = token + 1, visible_at = $4`, t.now.Add(delay).UnixNano())
}

func (t *tx) DeadLetter(rc store.Receipt, reason string) error {
	m, err := t.current(rc)
	if err != nil {
		return err
	}
	if err := t.Ack(rc); err != nil {
		return err
	}
	_, err = t.exec(`INSERT INTO flowgen_messages (stream, id, job, payload, visible_at, attempt, reason)
		VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT (stream, id) DO NOTHING`,
		rc.Stream+store.DeadLetterSuffix, rc.ID[:], m.Job, nonNil(m.Payload), t.now.UnixNano(), m.Attempt, reason)
	return err
}

func (t *tx) Pending(stream string) ([]store.Message, error) {
	rows, err := t.tx.QueryContext(t.ctx, `SELECT id, job, payload, visible_at, attempt, token, reason
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

func (t *tx) leaseRow(job []byte, lock string) (owner string, token, expires int64, found bool, err error) {
	err = t.tx.QueryRowContext(t.ctx, `SELECT owner, token, expires FROM flowgen_leases WHERE job = $1 `+lock, job).
		Scan(&owner, &token, &expires)
	if errors.Is(err, sql.ErrNoRows) {
		return "", 0, 0, false, nil
	}
	return owner, token, expires, err == nil, err
}

func (t *tx) Lease(job []byte) (store.Lease, error) {
	owner, token, expires, found, err := t.leaseRow(job, "")
	if err != nil {
		return store.Lease{}, err
	}
	if !found {
		return store.Lease{}, fmt.Errorf("lease of %x: %w", job, store.ErrNotFound)
	}
	return store.Lease{Job: bytes.Clone(job), Owner: owner, Token: uint64(token), Expires: time.Unix(0, expires)}, nil
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
	exp := t.now.Add(ttl).UnixNano()
	var token int64
	err := t.tx.QueryRowContext(t.ctx, acquireSQL, job, owner, t.now.UnixNano(), exp).Scan(&token)
	if errors.Is(err, sql.ErrNoRows) {
		holder, _, _, _, _ := t.leaseRow(job, "")
		return store.Lease{}, fmt.Errorf("lease of %x held by %s: %w", job, holder, store.ErrLeaseHeld)
	}
	if err != nil {
		return store.Lease{}, err
	}
	return store.Lease{Job: bytes.Clone(job), Owner: owner, Token: uint64(token), Expires: time.Unix(0, exp)}, nil
}

// Fence takes a share lock on the lease row, so no acquisition can slip in
// between the check and the commit.
func (t *tx) Fence(want store.Lease) error {
	owner, token, expires, found, err := t.leaseRow(want.Job, "FOR SHARE")
	if err != nil {
		return err
	}
	if !found || uint64(token) != want.Token || owner != want.Owner || expires <= t.now.UnixNano() {
		return fmt.Errorf("lease %d of %x for %s: %w", want.Token, want.Job, want.Owner, store.ErrFenced)
	}
	return nil
}

func (t *tx) ReleaseLease(want store.Lease) error {
	if err := t.Fence(want); err != nil {
		return nil // already superseded: nothing to release
	}
	_, err := t.exec(`UPDATE flowgen_leases SET expires = 0 WHERE job = $1 AND token = $2`, want.Job, int64(want.Token))
	return err
}
