// Package boltstore is the embedded store backend: one bbolt file, zero
// setup, every commit fsynced. Concurrent Updates are group-committed
// (group.go): a lone Update commits at once, and the ones that arrive while
// a commit runs share the next transaction and fsync, so throughput is not
// one fsync per step and latency is not a batching timer.
package boltstore

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"time"

	bolt "go.etcd.io/bbolt"
	bolterrors "go.etcd.io/bbolt/errors"

	"github.com/flowgen-dev/flowgen/runtime/store"
)

var (
	bucketKV       = []byte("kv")
	bucketCounters = []byte("counters")
	bucketLeases   = []byte("leases")
	bucketMsgs     = []byte("msgs")  // stream \0 id -> record
	bucketReady    = []byte("ready") // stream \0 visibleAt id -> nil
	bucketDone     = []byte("done")  // stream \0 id -> acknowledged at (purge.go)
	allBuckets     = [][]byte{bucketKV, bucketCounters, bucketLeases, bucketMsgs, bucketReady, bucketDone}
)

// Options tune a Store; the zero value is the production default.
type Options struct {
	// Now is the clock for visibility timeouts and lease expiry; time.Now
	// when nil. Tests move it to expire leases without sleeping.
	Now func() time.Time
	// NoSync skips fsync on commit. Only for tests that simulate crashes by
	// discarding process state: a machine crash may lose committed work.
	NoSync bool
	// LockTimeout is how long Open waits for another process to release
	// the file (default 5s) before failing with ErrLocked.
	LockTimeout time.Duration
}

// ErrLocked: another process has the store file open. One process owns an
// embedded store; others reach its jobs through that process (flowgen
// serve) or use PostgreSQL.
var ErrLocked = errors.New("the store file is in use by another process")

// fillPercent is how full bbolt fills a page before it splits it. Every
// bucket's keys grow mostly at the end (job and message ids are UUIDv7s,
// ready keys times), so the page left behind by a split at bbolt's default
// of half full would stay half empty; fuller pages mean fewer pages for a
// commit to write (about 15% fewer in BenchmarkLinearFlow).
const fillPercent = 0.9

// Store is a store.Store on a bbolt file.
type Store struct {
	db        *bolt.DB
	now       func() time.Time
	commit    committer
	listeners subscribers
	purge     purgeCursor
}

var _ store.Store = (*Store)(nil)

// Open opens or creates the store file at path.
func Open(path string, opts Options) (*Store, error) {
	timeout := opts.LockTimeout
	if timeout == 0 {
		timeout = 5 * time.Second
	}
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: timeout})
	if errors.Is(err, bolterrors.ErrTimeout) {
		return nil, fmt.Errorf("open store %s: %w (waited %s)", path, ErrLocked, timeout)
	}
	if err != nil {
		return nil, fmt.Errorf("open store %s: %w", path, err)
	}
	err = db.Update(func(tx *bolt.Tx) error {
		for _, b := range allBuckets {
			if _, err := tx.CreateBucketIfNotExists(b); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("initialise store %s: %w", path, err)
	}
	db.NoSync = opts.NoSync
	now := opts.Now
	if now == nil {
		now = time.Now
	}
	return &Store{db: db, now: now, commit: committer{db: db}}, nil
}

// Close closes the file.
func (s *Store) Close() error { return s.db.Close() }

// Capabilities: one writer at a time, each commit a sync (unless NoSync,
// which still keeps one writer), no partial undo.
func (s *Store) Capabilities() store.Capabilities {
	return store.Capabilities{ExpensiveCommits: true}
}

// Reclaim does nothing: bbolt reuses freed pages at once.
func (s *Store) Reclaim(ctx context.Context) error { return ctx.Err() }

// Path returns the store's file path.
func (s *Store) Path() string { return s.db.Path() }

// Update implements store.Store with group commit.
func (s *Store) Update(ctx context.Context, fn func(store.Tx) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	var streams []string
	err := s.commit.update(func(btx *bolt.Tx) error {
		t := &tx{btx: btx, now: s.now()}
		if err := fn(t); err != nil {
			return err
		}
		streams = t.streams // of the run that committed, when fn ran twice
		if err := t.flushReserved(); err != nil {
			return err
		}
		return t.flushCounters()
	})
	if err == nil && len(streams) > 0 {
		s.listeners.publish(streams)
	}
	return err
}

// View implements store.Store.
func (s *Store) View(ctx context.Context, fn func(store.ReadTx) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return s.db.View(func(btx *bolt.Tx) error {
		return fn(&tx{btx: btx, now: s.now()})
	})
}

// tx implements store.Tx over one bbolt transaction.
type tx struct {
	btx *bolt.Tx
	now time.Time
	// streams are the streams this transaction published on, for the
	// listeners (notify.go) once it commits.
	streams []string
	// counters are the counters this Update's function changed, written
	// to the bucket when it returns (flushCounters): a step adds to the
	// same ledger several times, and each write to a bbolt bucket walks
	// its tree again.
	counters map[string]int64
	// cursors are this transaction's point-read cursors, one per bucket:
	// bbolt's Get makes a cursor and grows its stack on every call, and
	// that garbage is a large part of what a step allocates.
	cursors []bucketCursor
	// reserved are the messages this Update's function published reserved
	// (EnqueueReserved) and has not acknowledged yet: a worker that takes
	// its job's next step on in the commit that publishes it acknowledges
	// that message in the same commit, and then only its acknowledgement
	// is written (flushReserved writes the rest).
	reserved unwritten
	// leases are the lease rows this transaction read or wrote
	// (leaseRecord).
	leases []knownLease
}

// bucketCursor is the point-read cursor of a bucket.
type bucketCursor struct {
	name string
	c    *bolt.Cursor
}

func (t *tx) b(name []byte) *bolt.Bucket { return t.btx.Bucket(name) }

// get is bucket.Get(key) through the transaction's cursor of the bucket,
// which keeps its stack from one read to the next. A cursor's Seek
// starts again from the bucket's root, so it sees the transaction's own
// writes.
func (t *tx) get(bucket, key []byte) []byte {
	var c *bolt.Cursor
	for _, bc := range t.cursors {
		if bc.name == string(bucket) {
			c = bc.c
			break
		}
	}
	if c == nil {
		c = t.b(bucket).Cursor()
		t.cursors = append(t.cursors, bucketCursor{string(bucket), c})
	}
	k, v := c.Seek(key)
	if !bytes.Equal(k, key) {
		return nil
	}
	return v
}

func (t *tx) Get(key []byte) ([]byte, error) {
	v := t.get(bucketKV, key)
	if v == nil {
		return nil, fmt.Errorf("get %q: %w", key, store.ErrNotFound)
	}
	return v, nil
}

func (t *tx) ReadMany(keys, counters [][]byte) ([][]byte, []int64, error) {
	values, ns := make([][]byte, len(keys)), make([]int64, len(counters))
	for i, k := range keys {
		if v := t.get(bucketKV, k); v != nil {
			values[i] = v
		}
	}
	for i, k := range counters {
		ns[i] = t.counter(k)
	}
	return values, ns, nil
}

func (t *tx) Scan(prefix []byte, fn func(key, value []byte) error) error {
	return t.ScanFirst(prefix, -1, fn)
}

// ScanFirst implements store.ReadTx; a negative max is no limit.
func (t *tx) ScanFirst(prefix []byte, max int, fn func(key, value []byte) error) error {
	c := t.b(bucketKV).Cursor()
	for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix) && max != 0; k, v = c.Next() {
		if err := fn(k, v); err != nil {
			return err
		}
		max--
	}
	return nil
}

// ScanMany is one Scan after another: a bbolt read costs no round trip.
func (t *tx) ScanMany(prefixes [][]byte, fn func(prefix int, key, value []byte) error) error {
	for i, p := range prefixes {
		if err := t.Scan(p, func(k, v []byte) error { return fn(i, k, v) }); err != nil {
			return err
		}
	}
	return nil
}

func (t *tx) Counter(key []byte) (int64, error) {
	return t.counter(key), nil
}

// counter is key's value as this transaction left it.
func (t *tx) counter(key []byte) int64 {
	if v, ok := t.counters[string(key)]; ok {
		return v
	}
	return decodeCounter(t.get(bucketCounters, key))
}

// flushCounters writes the counters changed since the last flush, in key
// order (bbolt's cheapest).
func (t *tx) flushCounters() error {
	if len(t.counters) == 0 {
		return nil
	}
	keys := make([]string, 0, 16) // on the stack for a step's few
	for k := range t.counters {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	b := t.b(bucketCounters)
	for _, k := range keys {
		if err := b.Put([]byte(k), encodeCounter(t.counters[k])); err != nil {
			return err
		}
	}
	clear(t.counters)
	return nil
}

func (t *tx) ScanCounters(prefix []byte, fn func(key []byte, value int64) error) error {
	if err := t.flushCounters(); err != nil {
		return err
	}
	c := t.b(bucketCounters).Cursor()
	for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
		if err := fn(k, decodeCounter(v)); err != nil {
			return err
		}
	}
	return nil
}

func (t *tx) Put(key, value []byte) error {
	if len(key) == 0 {
		return errors.New("put: empty key")
	}
	return t.b(bucketKV).Put(key, value)
}

func (t *tx) PutOnce(key, value []byte) error {
	if have := t.get(bucketKV, key); have != nil {
		if bytes.Equal(have, value) {
			return nil
		}
		return fmt.Errorf("put-once %q: %w", key, store.ErrConflict)
	}
	return t.Put(key, value)
}

func (t *tx) Delete(key []byte) error { return t.b(bucketKV).Delete(key) }

func (t *tx) Add(key []byte, delta, max int64) (int64, error) {
	if len(key) == 0 {
		return 0, errors.New("add: empty key")
	}
	cur := t.counter(key)
	next := cur + delta
	if (delta > 0 && next < cur) || next < 0 || next > max {
		return cur, fmt.Errorf("add %d to %q (%d, max %d): %w", delta, key, cur, max, store.ErrOverflow)
	}
	if t.counters == nil {
		t.counters = map[string]int64{}
	}
	t.counters[string(key)] = next
	return next, nil
}

// Bump adds at once: bbolt has no round trips to save.
func (t *tx) Bump(key []byte, delta, max int64) error {
	_, err := t.Add(key, delta, max)
	return err
}

func (t *tx) Collate(c store.Collation) (bool, error) {
	sem, err := t.Add(c.Semaphore, c.Delta, maxCounter)
	if err != nil {
		return false, err
	}
	if sem != c.Threshold {
		return false, nil
	}
	if _, err := t.Add(c.GUID, c.Weight, maxCounter); err != nil {
		return false, err
	}
	return true, nil
}

// CollateAndRead is Collate, then ReadMany on a hit: bbolt has no round
// trips to save.
func (t *tx) CollateAndRead(c store.Collation, keys, counters [][]byte) (bool, [][]byte, []int64, error) {
	hit, err := t.Collate(c)
	if !hit || err != nil {
		return hit, nil, nil, err
	}
	values, ns, err := t.ReadMany(keys, counters)
	return hit, values, ns, err
}

// Atomically fails: a bbolt transaction cannot undo part of its work.
func (t *tx) Atomically(func(store.Tx) error) error {
	return fmt.Errorf("boltstore: atomic units: %w", store.ErrUnsupported)
}

// maxCounter bounds semaphores and ledgers stored through Collate; ledger
// ceilings are enforced by the ledger package before increments.
const maxCounter = 999_999_999_999_999

func encodeCounter(v int64) []byte {
	return binary.BigEndian.AppendUint64(nil, uint64(v))
}

func decodeCounter(b []byte) int64 {
	if len(b) != 8 {
		return 0
	}
	return int64(binary.BigEndian.Uint64(b))
}
