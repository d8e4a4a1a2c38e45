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

// idleConns is how many idle connections Open keeps: enough for a busy
// worker process's workers and their batches.
const idleConns = 32

// Store is a store.Store on PostgreSQL.
type Store struct {
	db   *sql.DB
	now  func() time.Time
	opts Options
	url  string // for LISTEN; empty when made with New
}

var _ store.Store = (*Store)(nil)

// Capabilities: PostgreSQL transactions lock rows and have savepoints; a
// commit costs a round trip, as a look would.
func (s *Store) Capabilities() store.Capabilities {
	return store.Capabilities{LocksRows: true, Savepoints: true}
}

// Ready always answers true: a reservation costs one round trip, as a
// look would, so an idle worker gains nothing by looking first.
func (s *Store) Ready(ctx context.Context, stream string) (bool, error) {
	return ctx.Err() == nil, ctx.Err()
}

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
	// A session compiles flowgen_apply and plans its statements once; a
	// pool that closes connections after each burst of work (database/sql
	// keeps 2 idle by default) pays that again on every new one.
	db.SetMaxIdleConns(idleConns)
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
	conn, err := s.db.Conn(ctx)
	if err != nil {
		return fmt.Errorf("begin: %w", err)
	}
	begin := "BEGIN READ WRITE"
	if readOnly {
		begin = "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY"
	}
	t := &tx{session: session{ctx: ctx, conn: conn, prefix: []ahead{{text: begin}}}, now: s.now()}
	defer t.release()
	if err := fn(t); err != nil {
		return err
	}
	if t.failed != nil {
		return t.failed // refused writes the caller did not hear of
	}
	if err := t.writeClaims(); err != nil {
		return err
	}
	// The writes no operation has carried yet travel with the COMMIT.
	var q string
	var args []any
	if len(t.pending.op) > 0 {
		q, args = applySQL, t.pending.args(t.now)
	}
	if err := t.commit(q, args...); err != nil {
		return fmt.Errorf("commit: %w", applyError(err))
	}
	return nil
}

// tx implements store.Tx on one database transaction. Writes that need no
// answer wait in pending and travel with the next operation that does
// (see apply.go).
type tx struct {
	session
	now     time.Time
	pending batch
	// failed is the error of a batch the server refused; the transaction
	// is aborted and every later operation returns it.
	failed error
	// leases holds lease rows read along with a reservation.
	leases map[string]leaseRow
	// holding is the leases this transaction acquired or fenced on, by
	// job: what it publishes for those jobs is stamped with the holder.
	holding map[string]store.Lease
	// savepoints counts the units Atomically has begun, to name them.
	savepoints int
	// claims are the reservations not written yet (stream.go).
	claims *claims
}

// hold records that the transaction writes for l's job under l.
func (t *tx) hold(l store.Lease) {
	if t.holding == nil {
		t.holding = map[string]store.Lease{}
	}
	t.holding[string(l.Job)] = l
}

// Get is ReadMany of one key: with queued writes, one round trip.
func (t *tx) Get(key []byte) ([]byte, error) {
	values, _, err := t.ReadMany([][]byte{key}, nil)
	if err != nil {
		return nil, err
	}
	if values[0] == nil {
		return nil, fmt.Errorf("get %q: %w", key, store.ErrNotFound)
	}
	return values[0], nil
}

// readManySQL reads values and counters in one statement.
const readManySQL = `SELECT false, k, v, 0 FROM flowgen_kv WHERE k = ANY($1)
	UNION ALL SELECT true, k, NULL, v FROM flowgen_counters WHERE k = ANY($2)`

// ReadMany is one statement whatever the number of keys.
func (t *tx) ReadMany(keys, counters [][]byte) ([][]byte, []int64, error) {
	values, ns := make([][]byte, len(keys)), make([]int64, len(counters))
	if len(keys)+len(counters) == 0 {
		return values, ns, nil
	}
	if len(t.pending.op) > 0 || t.failed != nil {
		return t.readMany(keys, counters) // with the queued writes
	}
	rows, err := t.query(readManySQL, pq.ByteaArray(keys), pq.ByteaArray(counters))
	if err != nil {
		return nil, nil, err
	}
	defer rows.Close()
	valueAt, counterAt := positions(keys), positions(counters)
	for rows.Next() {
		var counter bool
		var k, v []byte
		var n int64
		if err := rows.Scan(&counter, &k, &v, &n); err != nil {
			return nil, nil, err
		}
		if counter {
			for _, i := range counterAt[string(k)] {
				ns[i] = n
			}
			continue
		}
		if v == nil {
			v = []byte{}
		}
		for _, i := range valueAt[string(k)] {
			values[i] = v
		}
	}
	return values, ns, rows.Err()
}

// positions maps each key to where it stands in keys (a key may repeat).
func positions(keys [][]byte) map[string][]int {
	at := make(map[string][]int, len(keys))
	for i, k := range keys {
		at[string(k)] = append(at[string(k)], i)
	}
	return at
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
func (t *tx) scan(table string, prefix []byte, max int, fn func(k []byte, v any) error, newV func() any) error {
	if err := t.flush(); err != nil {
		return err
	}
	if max == 0 {
		return nil
	}
	start, end := prefixRange(prefix)
	limit := any(nil) // LIMIT NULL: no limit
	if max > 0 {
		limit = max
	}
	var rows *sql.Rows
	var err error
	if end == nil {
		rows, err = t.query(`SELECT k, v FROM `+table+` WHERE k >= $1 ORDER BY k LIMIT $2`, nonNil(start), limit)
	} else {
		rows, err = t.query(`SELECT k, v FROM `+table+` WHERE k >= $1 AND k < $2 ORDER BY k LIMIT $3`, nonNil(start), end, limit)
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
	return t.ScanFirst(prefix, -1, fn)
}

// ScanFirst implements store.ReadTx; a negative max is no limit.
func (t *tx) ScanFirst(prefix []byte, max int, fn func(key, value []byte) error) error {
	return t.scan("flowgen_kv", prefix, max, func(k []byte, v any) error {
		return fn(k, *v.(*[]byte))
	}, func() any { return new([]byte) })
}

// scanManySQL reads the values under several prefixes in one statement;
// an empty end bound stands for none (a prefix of 0xff bytes, or the empty
// prefix): lib/pq's arrays carry no nulls. The two cases are two branches,
// each gated by a condition on the bound alone, so each reads the key
// index from its start to its end: a bound that may be absent, written
// with OR, would read the index from the start to its very end.
const scanManySQL = `SELECT p.i, kv.k, kv.v
	FROM unnest($1::bytea[], $2::bytea[]) WITH ORDINALITY AS p(lo, hi, i)
	CROSS JOIN LATERAL (
		SELECT k, v FROM flowgen_kv WHERE octet_length(p.hi) > 0 AND k >= p.lo AND k < p.hi
		UNION ALL
		SELECT k, v FROM flowgen_kv WHERE octet_length(p.hi) = 0 AND k >= p.lo) kv
	ORDER BY p.i, kv.k`

// ScanMany is one statement whatever the number of prefixes; like Scan,
// it reads every row before calling fn.
func (t *tx) ScanMany(prefixes [][]byte, fn func(prefix int, key, value []byte) error) error {
	if len(prefixes) == 0 {
		return nil
	}
	if err := t.flush(); err != nil {
		return err
	}
	lo, hi := make(pq.ByteaArray, len(prefixes)), make(pq.ByteaArray, len(prefixes))
	for i, p := range prefixes {
		lo[i], hi[i] = prefixRange(p)
	}
	rows, err := t.query(scanManySQL, lo, hi)
	if err != nil {
		return err
	}
	type hit struct {
		i    int
		k, v []byte
	}
	var hits []hit
	for rows.Next() {
		var h hit
		if err := rows.Scan(&h.i, &h.k, &h.v); err != nil {
			rows.Close()
			return err
		}
		hits = append(hits, h)
	}
	if err := rows.Close(); err != nil {
		return err
	}
	if err := rows.Err(); err != nil {
		return err
	}
	for _, h := range hits {
		if err := fn(h.i-1, h.k, nonNil(h.v)); err != nil {
			return err
		}
	}
	return nil
}

// Counter is ReadMany of one counter: with queued writes, one round trip.
func (t *tx) Counter(key []byte) (int64, error) {
	_, ns, err := t.ReadMany(nil, [][]byte{key})
	if err != nil {
		return 0, err
	}
	return ns[0], nil
}

func (t *tx) ScanCounters(prefix []byte, fn func(key []byte, value int64) error) error {
	return t.scan("flowgen_counters", prefix, -1, func(k []byte, v any) error {
		return fn(k, *v.(*int64))
	}, func() any { return new(int64) })
}

func (t *tx) Put(key, value []byte) error {
	if len(key) == 0 {
		return errors.New("put: empty key")
	}
	return t.queue(op{kind: opPut, k: key, v: nonNil(value)})
}

func (t *tx) PutOnce(key, value []byte) error {
	return t.queue(op{kind: opPutOnce, k: key, v: nonNil(value)})
}

func (t *tx) Delete(key []byte) error {
	return t.queue(op{kind: opDelete, k: key})
}

// Add travels with the queued writes and answers in the same round trip;
// a refused add writes nothing and leaves the transaction usable.
func (t *tx) Add(key []byte, delta, max int64) (int64, error) {
	v, applied, err := t.answer(op{kind: opAdd, k: key, a: delta, b: max})
	if err != nil {
		return 0, err
	}
	if !applied {
		return v, fmt.Errorf("add %d to %q (%d, max %d): %w", delta, key, v, max, store.ErrOverflow)
	}
	return v, nil
}

func (t *tx) Bump(key []byte, delta, max int64) error {
	if t.failed == nil && t.pending.mergeBump(key, delta, max) {
		return nil
	}
	return t.queue(op{kind: opBump, k: key, a: delta, b: max})
}

func (t *tx) Collate(c store.Collation) (bool, error) {
	hit, _, _, err := t.CollateAndRead(c, nil, nil)
	return hit, err
}

// CollateAndRead: the collation and the reads are operations of one
// flowgen_apply call, so the reads cost no round trip even when the
// collation misses and their answers go unused.
func (t *tx) CollateAndRead(c store.Collation, keys, counters [][]byte) (bool, [][]byte, []int64, error) {
	ops := append([]op{{kind: opCollate, k: c.Semaphore, a: c.Delta, b: c.Threshold, k2: c.GUID, c: c.Weight}}, reads(keys, counters)...)
	replies, err := t.ask(ops...)
	if err != nil {
		return false, nil, nil, fmt.Errorf("collate: %w", err)
	}
	if !replies[0].applied {
		return false, nil, nil, nil
	}
	values, ns := answers(replies[1:], keys, counters)
	return true, values, ns, nil
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
