package pgstore

import (
	"context"
	"fmt"
	"time"

	"github.com/flowgen-dev/flowgen/runtime/store"
)

// purgeSQL deletes the oldest acknowledged messages of a stream, found
// through flowgen_messages_acked (an acknowledged message's visible_at is
// the time of its acknowledgement, migration 6).
const purgeSQL = `DELETE FROM flowgen_messages m USING (
	SELECT id FROM flowgen_messages
	WHERE stream = $1 AND done AND visible_at < $2
	ORDER BY visible_at LIMIT $3
) old WHERE m.stream = $1 AND m.id = old.id AND m.done`

// PurgeAcked implements store.Store in one statement of its own, which
// locks only the rows it deletes.
func (s *Store) PurgeAcked(ctx context.Context, stream string, before time.Time, max int) (int, error) {
	if max <= 0 {
		return 0, ctx.Err()
	}
	res, err := s.db.ExecContext(ctx, purgeSQL, stream, before.UnixNano(), max)
	if err != nil {
		return 0, fmt.Errorf("purge acknowledged messages of %s: %w", stream, err)
	}
	n, err := res.RowsAffected()
	return int(n), err
}

// deleteLeaseSQL forgets a job's lease row.
const deleteLeaseSQL = `DELETE FROM flowgen_leases WHERE job = $1`

func (t *tx) DeleteLease(job []byte) error {
	if err := t.flushMessages(); err != nil {
		return err
	}
	delete(t.leases, string(job))
	delete(t.holding, string(job))
	return t.exec(deleteLeaseSQL, job)
}

// deletePrefixSQL deletes up to $3 values, then up to what is left of $3
// counters, with keys in [$1, $2), in one statement; deleteFromSQL is it
// for a prefix with no end bound (0xff bytes). The bounds are written
// out, not ORed with a test for a missing one, so that each read of the
// key index stops at the prefix's end.
const (
	deletePrefixSQL = `WITH v AS (
	DELETE FROM flowgen_kv WHERE k IN (SELECT k FROM flowgen_kv WHERE k >= $1 AND k < $2 ORDER BY k LIMIT $3)
	RETURNING 1
), c AS (
	DELETE FROM flowgen_counters WHERE k IN (SELECT k FROM flowgen_counters WHERE k >= $1 AND k < $2 ORDER BY k
		LIMIT greatest($3 - (SELECT count(*) FROM v), 0))
	RETURNING 1
) SELECT (SELECT count(*) FROM v) + (SELECT count(*) FROM c)`
	deleteFromSQL = `WITH v AS (
	DELETE FROM flowgen_kv WHERE k IN (SELECT k FROM flowgen_kv WHERE k >= $1 ORDER BY k LIMIT $2)
	RETURNING 1
), c AS (
	DELETE FROM flowgen_counters WHERE k IN (SELECT k FROM flowgen_counters WHERE k >= $1 ORDER BY k
		LIMIT greatest($2 - (SELECT count(*) FROM v), 0))
	RETURNING 1
) SELECT (SELECT count(*) FROM v) + (SELECT count(*) FROM c)`
)

func (t *tx) DeletePrefix(prefix []byte, max int) (int, error) {
	if err := t.flush(); err != nil {
		return 0, err
	}
	start, end := prefixRange(prefix)
	var n int
	var err error
	if end == nil {
		err = t.queryRow(deleteFromSQL, nonNil(start), max).Scan(&n)
	} else {
		err = t.queryRow(deletePrefixSQL, nonNil(start), end, max).Scan(&n)
	}
	return n, err
}

// reclaimSQL vacuums the store's tables. VACUUM takes no lock that holds
// up reads or writes; SKIP_LOCKED passes over a table another VACUUM (an
// autovacuum worker, another process's sweeper) holds.
const reclaimSQL = `VACUUM (SKIP_LOCKED) flowgen_kv, flowgen_counters, flowgen_messages, flowgen_leases`

// Reclaim vacuums. VACUUM cannot run in a transaction:
// it is a statement of its own on a pooled connection.
func (s *Store) Reclaim(ctx context.Context) error {
	if _, err := s.db.ExecContext(ctx, reclaimSQL); err != nil {
		return fmt.Errorf("reclaim: %w", err)
	}
	return nil
}

// backlogSQL counts a stream's pending messages and those visible at $2,
// with the oldest visibility time among them.
const backlogSQL = `SELECT count(*) FILTER (WHERE visible_at <= $2), coalesce(min(visible_at) FILTER (WHERE visible_at <= $2), 0), count(*)
	FROM flowgen_messages WHERE stream = $1 AND NOT done`

// Backlog implements store.Store in one statement.
func (s *Store) Backlog(ctx context.Context, stream string) (store.Backlog, error) {
	b := store.Backlog{Now: s.now()}
	var oldest int64
	if err := s.db.QueryRowContext(ctx, backlogSQL, stream, b.Now.UnixNano()).Scan(&b.Ready, &oldest, &b.Pending); err != nil {
		return b, fmt.Errorf("backlog of %s: %w", stream, err)
	}
	if b.Ready > 0 {
		b.OldestReady = time.Unix(0, oldest)
	}
	return b, nil
}
