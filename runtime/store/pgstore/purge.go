package pgstore

import (
	"context"
	"fmt"
	"time"
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
