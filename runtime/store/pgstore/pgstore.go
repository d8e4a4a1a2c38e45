// Package pgstore is the PostgreSQL store backend (github.com/lib/pq): many
// worker processes on many machines share one database. The step 2
// compound primitive is one SQL statement; workers claim messages with FOR
// UPDATE SKIP LOCKED; every Update is one database transaction.
package pgstore

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/lib/pq"

	"github.com/flowgen-dev/flowgen/runtime/store"
)

// Options tune a Store; the zero value is the production default.
type Options struct {
	// Now is the clock for visibility timeouts and lease expiry; time.Now
	// when nil. Every worker must use the same clock source (UTC wall time).
	Now func() time.Time
	// MaxRetries bounds how often Update reruns a transaction that lost a
	// serialization conflict or deadlock (default 10).
	MaxRetries int
	// Dialer opens the store's database connections, its LISTEN
	// connection included; nil dials as lib/pq does. Benchmarks pass a
	// pgwire.Counter to count round trips and statements.
	Dialer pq.Dialer
}

// Store is a store.Store on PostgreSQL.
type Store struct {
	db   *sql.DB
	now  func() time.Time
	opts Options
	url  string // for LISTEN; empty when made with New
}

var _ store.Store = (*Store)(nil)

// Open connects to the database at url (a lib/pq connection string or
// postgres:// URL) and checks that the schema is migrated. Parameters
// travel in binary (lib/pq's binary_parameters), which sends a
// parameterised statement and reads its answer in one round trip instead
// of two.
func Open(ctx context.Context, url string, opts Options) (*Store, error) {
	cfg, err := pq.NewConfig(url)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", redact(url), err)
	}
	cfg.BinaryParameters = true
	connector, err := pq.NewConnectorConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", redact(url), err)
	}
	if opts.Dialer != nil {
		connector.Dialer(opts.Dialer)
	}
	db := sql.OpenDB(connector)
	s, err := New(ctx, db, opts)
	if err != nil {
		db.Close()
		return nil, err
	}
	s.url = url
	return s, nil
}

// New wraps an open database handle; the schema must be migrated.
func New(ctx context.Context, db *sql.DB, opts Options) (*Store, error) {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.MaxRetries == 0 {
		opts.MaxRetries = 10
	}
	ms, have, err := MigrationStatus(ctx, db)
	if err != nil {
		return nil, fmt.Errorf("check schema: %w", err)
	}
	for _, m := range ms {
		if !have[m.Version] {
			return nil, fmt.Errorf("schema migration %d (%s) is not applied: run flowgen migrate up", m.Version, m.Name)
		}
	}
	return &Store{db: db, now: opts.Now, opts: opts}, nil
}

// DB returns the underlying handle.
func (s *Store) DB() *sql.DB { return s.db }

// Close closes the connection pool.
func (s *Store) Close() error { return s.db.Close() }

// retryable reports a conflict PostgreSQL resolves by aborting one side.
func retryable(err error) bool {
	var pe *pq.Error
	if errors.As(err, &pe) {
		switch pe.Code {
		case "40001", "40P01": // serialization_failure, deadlock_detected
			return true
		}
	}
	return false
}

// Update implements store.Store: one transaction, rerun on serialization
// failures and deadlocks.
func (s *Store) Update(ctx context.Context, fn func(store.Tx) error) error {
	var err error
	for attempt := 0; attempt <= s.opts.MaxRetries; attempt++ {
		if err = ctx.Err(); err != nil {
			return err
		}
		err = s.run(ctx, false, func(t *tx) error { return fn(t) })
		if !retryable(err) {
			return err
		}
		time.Sleep(time.Duration(attempt+1) * time.Millisecond)
	}
	return err
}

// View implements store.Store on a repeatable-read snapshot.
func (s *Store) View(ctx context.Context, fn func(store.ReadTx) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return s.run(ctx, true, func(t *tx) error { return fn(t) })
}

func (s *Store) run(ctx context.Context, readOnly bool, fn func(*tx) error) error {
	opts := &sql.TxOptions{ReadOnly: readOnly}
	if readOnly {
		opts.Isolation = sql.LevelRepeatableRead
	}
	stx, err := s.db.BeginTx(ctx, opts)
	if err != nil {
		return fmt.Errorf("begin: %w", err)
	}
	t := &tx{ctx: ctx, tx: stx, now: s.now()}
	if err := fn(t); err != nil {
		stx.Rollback()
		return err
	}
	if err := stx.Commit(); err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	return nil
}

// tx implements store.Tx on one database transaction.
type tx struct {
	ctx context.Context
	tx  *sql.Tx
	now time.Time
}

func (t *tx) exec(query string, args ...any) (sql.Result, error) {
	return t.tx.ExecContext(t.ctx, query, args...)
}

func (t *tx) Get(key []byte) ([]byte, error) {
	var v []byte
	err := t.tx.QueryRowContext(t.ctx, `SELECT v FROM flowgen_kv WHERE k = $1`, key).Scan(&v)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("get %q: %w", key, store.ErrNotFound)
	}
	return v, err
}

// GetMany is one statement whatever the number of keys.
func (t *tx) GetMany(keys [][]byte) ([][]byte, error) {
	out := make([][]byte, len(keys))
	if len(keys) == 0 {
		return out, nil
	}
	rows, err := t.tx.QueryContext(t.ctx, `SELECT k, v FROM flowgen_kv WHERE k = ANY($1)`, pq.ByteaArray(keys))
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	at := make(map[string][]int, len(keys))
	for i, k := range keys {
		at[string(k)] = append(at[string(k)], i)
	}
	for rows.Next() {
		var k, v []byte
		if err := rows.Scan(&k, &v); err != nil {
			return nil, err
		}
		if v == nil {
			v = []byte{}
		}
		for _, i := range at[string(k)] {
			out[i] = v
		}
	}
	return out, rows.Err()
}

// prefixRange returns the bounds of the keys starting with prefix; end is
// nil when no finite bound exists (a prefix of 0xff bytes).
func prefixRange(prefix []byte) (start, end []byte) {
	end = bytes.Clone(prefix)
	for i := len(end) - 1; i >= 0; i-- {
		if end[i] < 0xff {
			end[i]++
			return prefix, end[:i+1]
		}
	}
	return prefix, nil
}

// scan reads every row of table under prefix before calling fn, so fn may
// use the transaction (lib/pq cannot run a query while rows are open).
func (t *tx) scan(table string, prefix []byte, fn func(k []byte, v any) error, newV func() any) error {
	start, end := prefixRange(prefix)
	var rows *sql.Rows
	var err error
	if end == nil {
		rows, err = t.tx.QueryContext(t.ctx, `SELECT k, v FROM `+table+` WHERE k >= $1 ORDER BY k`, start)
	} else {
		rows, err = t.tx.QueryContext(t.ctx, `SELECT k, v FROM `+table+` WHERE k >= $1 AND k < $2 ORDER BY k`, start, end)
	}
	if err != nil {
		return err
	}
	type kv struct {
		k []byte
		v any
	}
	var all []kv
	for rows.Next() {
		var k []byte
		v := newV()
		if err := rows.Scan(&k, v); err != nil {
			rows.Close()
			return err
		}
		all = append(all, kv{k, v})
	}
	if err := rows.Close(); err != nil {
		return err
	}
	if err := rows.Err(); err != nil {
		return err
	}
	for _, e := range all {
		if err := fn(e.k, e.v); err != nil {
			return err
		}
	}
	return nil
}

func (t *tx) Scan(prefix []byte, fn func(key, value []byte) error) error {
	return t.scan("flowgen_kv", prefix, func(k []byte, v any) error {
		return fn(k, *v.(*[]byte))
	}, func() any { return new([]byte) })
}

func (t *tx) Counter(key []byte) (int64, error) {
	var v int64
	err := t.tx.QueryRowContext(t.ctx, `SELECT v FROM flowgen_counters WHERE k = $1`, key).Scan(&v)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, nil
	}
	return v, err
}

func (t *tx) ScanCounters(prefix []byte, fn func(key []byte, value int64) error) error {
	return t.scan("flowgen_counters", prefix, func(k []byte, v any) error {
		return fn(k, *v.(*int64))
	}, func() any { return new(int64) })
}

func (t *tx) Put(key, value []byte) error {
	if len(key) == 0 {
		return errors.New("put: empty key")
	}
	if value == nil {
		value = []byte{}
	}
	_, err := t.exec(`INSERT INTO flowgen_kv (k, v) VALUES ($1, $2) ON CONFLICT (k) DO UPDATE SET v = EXCLUDED.v`, key, value)
	return err
}

func (t *tx) PutOnce(key, value []byte) error {
	if value == nil {
		value = []byte{}
	}
	res, err := t.exec(`INSERT INTO flowgen_kv (k, v) VALUES ($1, $2) ON CONFLICT (k) DO NOTHING`, key, value)
	if err != nil {
		return err
	}
	if n, _ := res.RowsAffected(); n == 1 {
		return nil
	}
	have, err := t.Get(key)
	if err != nil {
		return err
	}
	if bytes.Equal(have, value) {
		return nil
	}
	return fmt.Errorf("put-once %q: %w", key, store.ErrConflict)
}

func (t *tx) Delete(key []byte) error {
	_, err := t.exec(`DELETE FROM flowgen_kv WHERE k = $1`, key)
	return err
}

// Add is one statement in the common case: an upsert whose update only
// applies inside [0, max], so a refused add writes nothing. A delta that
// could not even start a new counter takes the checked two-statement path.
func (t *tx) Add(key []byte, delta, max int64) (int64, error) {
	if delta < 0 || delta > max {
		return t.addChecked(key, delta, max)
	}
	var next int64
	err := t.tx.QueryRowContext(t.ctx, `INSERT INTO flowgen_counters AS c (k, v) VALUES ($1, $2)
		ON CONFLICT (k) DO UPDATE SET v = c.v + EXCLUDED.v
		WHERE c.v + EXCLUDED.v BETWEEN 0 AND $3 RETURNING v`, key, delta, max).Scan(&next)
	if errors.Is(err, sql.ErrNoRows) {
		cur, _ := t.Counter(key)
		return cur, fmt.Errorf("add %d to %q (%d, max %d): %w", delta, key, cur, max, store.ErrOverflow)
	}
	return next, err
}

// addChecked reads the locked current value and writes only in range.
func (t *tx) addChecked(key []byte, delta, max int64) (int64, error) {
	var cur int64
	err := t.tx.QueryRowContext(t.ctx, `SELECT v FROM flowgen_counters WHERE k = $1 FOR UPDATE`, key).Scan(&cur)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return 0, err
	}
	if next := cur + delta; (delta > 0 && next < cur) || next < 0 || next > max {
		return cur, fmt.Errorf("add %d to %q (%d, max %d): %w", delta, key, cur, max, store.ErrOverflow)
	}
	var next int64
	err = t.tx.QueryRowContext(t.ctx, `INSERT INTO flowgen_counters (k, v) VALUES ($1, $2)
		ON CONFLICT (k) DO UPDATE SET v = flowgen_counters.v + EXCLUDED.v RETURNING v`, key, delta).Scan(&next)
	return next, err
}

// collateSQL is the step 2 compound primitive as one statement: apply the
// semaphore delta, and when the result equals the threshold add the weight
// to the GUID ledger; return the semaphore and whether the threshold hit.
const collateSQL = `
WITH s AS (
	INSERT INTO flowgen_counters (k, v) VALUES ($1, $2)
	ON CONFLICT (k) DO UPDATE SET v = flowgen_counters.v + EXCLUDED.v
	RETURNING v
), g AS (
	INSERT INTO flowgen_counters (k, v) SELECT $4, $5 FROM s WHERE s.v = $3
	ON CONFLICT (k) DO UPDATE SET v = flowgen_counters.v + EXCLUDED.v
	RETURNING v
)
SELECT s.v, EXISTS (SELECT 1 FROM g) FROM s`

func (t *tx) Collate(semaphore []byte, delta, threshold int64, guid []byte, weight int64) (bool, error) {
	var sem int64
	var hit bool
	if err := t.tx.QueryRowContext(t.ctx, collateSQL, semaphore, delta, threshold, guid, weight).Scan(&sem, &hit); err != nil {
		return false, fmt.Errorf("collate: %w", err)
	}
	if sem < 0 {
		return false, fmt.Errorf("collate %q: semaphore at %d: %w", semaphore, sem, store.ErrOverflow)
	}
	return hit, nil
}

// redact hides a password in a connection string for error messages.
func redact(url string) string {
	if i := bytes.IndexByte([]byte(url), '@'); i > 0 {
		if j := bytes.LastIndex([]byte(url[:i]), []byte(":")); j > 0 && j > bytes.Index([]byte(url), []byte("://"))+2 {
			return url[:j+1] + "***" + url[i:]
		}
	}
	return url
}
