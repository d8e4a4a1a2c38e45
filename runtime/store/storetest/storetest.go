// Package storetest is the conformance suite every store backend passes,
// unchanged: transactions, write-once values, counters and the step 2
// compound primitive, durable streams with visibility timeouts, leases with
// fencing, concurrency and durability across reopen.
package storetest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/flowgen-dev/flowgen/runtime/store"
)

// Backend opens a backend's store for one test.
type Backend struct {
	// Open opens the test's store with the given clock. Opening again after
	// Close must see the same data (the suite checks durability that way).
	Open func(now func() time.Time) (store.Store, error)
}

// Clock is a manual clock for lease and visibility tests.
type Clock struct {
	mu sync.Mutex
	t  time.Time
}

// NewClock returns a clock at a fixed instant.
func NewClock() *Clock { return &Clock{t: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)} }

// Now returns the clock's time.
func (c *Clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }

// Advance moves the clock forward.
func (c *Clock) Advance(d time.Duration) { c.mu.Lock(); c.t = c.t.Add(d); c.mu.Unlock() }

// Run runs the whole suite against the backend newBackend makes for each
// test.
func Run(t *testing.T, newBackend func(t *testing.T) Backend) {
	tests := []struct {
		name string
		fn   func(t *testing.T, h *harness)
	}{
		{"ValuesAndScan", testValuesAndScan},
		{"ReadMany", testReadMany},
		{"ScanMany", testScanMany},
		{"ScanFirst", testScanFirst},
		{"BacklogCountsReadyAndPending", testBacklog},
		{"FailedUpdateCommitsNothing", testFailedUpdateCommitsNothing},
		{"PutOnce", testPutOnce},
		{"Counters", testCounters},
		{"Collate", testCollate},
		{"HeldBackWritesAreReadAndFailTheirUpdate", testHeldBackWrites},
		{"StreamDelivery", testStreamDelivery},
		{"StreamVisibilityTimeout", testStreamVisibilityTimeout},
		{"StreamNackAndDeadLetter", testStreamNackAndDeadLetter},
		{"PendingReceiptSettles", testPendingReceiptSettles},
		{"EnqueueIsIdempotent", testEnqueueIsIdempotent},
		{"PurgeAckedForgetsOnlyOldAcknowledgements", testPurgeAcked},
		{"DeleteLeaseFencesItsHolder", testDeleteLease},
		{"DeletePrefixInBoundedCalls", testDeletePrefix},
		{"EnqueueInFailedUpdateIsNotPublished", testEnqueueInFailedUpdate},
		{"EnqueueReserved", testEnqueueReserved},
		{"Leases", testLeases},
		{"LeaseWritesReadBackInTheirTransaction", testLeaseInOneTransaction},
		{"FencedCommitIsRejected", testFencedCommit},
		{"ReserveSkipsJobsLeasedByOthers", testReserveAffinity},
		{"PublishedUnderALeaseOpensWhenItEnds", testPublishedUnderLease},
		{"ConcurrentUpdates", testConcurrentUpdates},
		{"ConcurrentReserveDeliversOnce", testConcurrentReserve},
		{"ReserveTakesSeveral", testReserveSeveral},
		{"SettleInTheReservingTransaction", testSettleWhereReserved},
		{"ReturnTakesBackTheAttempt", testReturn},
		{"ExtendKeepsAReservation", testExtend},
		{"AtomicallyUndoesOnlyItsUnit", testAtomically},
		{"DurableAcrossReopen", testDurableAcrossReopen},
		{"NotifiesOnCommittedPublish", testNotify},
		{"PeekSeesVisibleMessages", testPeek},
		{"FailingUpdateAmongConcurrentOnes", testFailingAmongConcurrent},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := newBackend(t)
			h := &harness{t: t, b: b, clock: NewClock()}
			h.open()
			t.Cleanup(func() { h.s.Close() })
			tc.fn(t, h)
		})
	}
}

type harness struct {
	t     *testing.T
	b     Backend
	s     store.Store
	clock *Clock
}

func (h *harness) open() {
	h.t.Helper()
	s, err := h.b.Open(h.clock.Now)
	if err != nil {
		h.t.Fatal(err)
	}
	h.s = s
}

func (h *harness) update(fn func(store.Tx) error) {
	h.t.Helper()
	if err := h.s.Update(context.Background(), fn); err != nil {
		h.t.Fatal(err)
	}
}

func (h *harness) view(fn func(store.ReadTx) error) {
	h.t.Helper()
	if err := h.s.View(context.Background(), fn); err != nil {
		h.t.Fatal(err)
	}
}

func (h *harness) get(key string) (string, error) {
	var v string
	err := h.s.View(context.Background(), func(tx store.ReadTx) error {
		b, err := tx.Get([]byte(key))
		v = string(b)
		return err
	})
	return v, err
}

func (h *harness) counter(key string) int64 {
	h.t.Helper()
	var n int64
	h.view(func(tx store.ReadTx) error {
		var err error
		n, err = tx.Counter([]byte(key))
		return err
	})
	return n
}

func (h *harness) reserve(stream string, vis time.Duration) (store.Message, error) {
	return reserve(h.s, stream, "w1", vis)
}

// reserveEach reserves the visible messages of stream one by one, for a
// minute each, and calls fn with each until none is left.
func (h *harness) reserveEach(stream string, fn func(store.Message)) {
	h.t.Helper()
	for {
		m, err := h.reserve(stream, time.Minute)
		if errors.Is(err, store.ErrEmpty) {
			return
		}
		if err != nil {
			h.t.Fatal(err)
		}
		fn(m)
	}
}

func reserve(s store.Store, stream, owner string, vis time.Duration) (store.Message, error) {
	ms, err := reserveUpTo(s, stream, owner, vis, 1)
	if err != nil {
		return store.Message{}, err
	}
	return ms[0], nil
}

// reserveUpTo reserves up to max messages in one Update and checks that
// Reserve kept its word on their number.
func reserveUpTo(s store.Store, stream, owner string, vis time.Duration, max int) ([]store.Message, error) {
	var ms []store.Message
	err := s.Update(context.Background(), func(tx store.Tx) error {
		var err error
		ms, err = tx.Reserve(store.Claim{Stream: stream, Owner: owner, Visibility: vis, Max: max})
		if err == nil && (len(ms) == 0 || len(ms) > max) {
			return fmt.Errorf("reserve up to %d: got %d messages", max, len(ms))
		}
		return err
	})
	return ms, err
}

func id(n byte) [16]byte { return [16]byte{15: n} }

func testValuesAndScan(t *testing.T, h *harness) {
	h.update(func(tx store.Tx) error {
		for _, k := range []string{"pid/b/2", "pid/a/1", "pid/b/1", "pid/bb/1", "other"} {
			if err := tx.Put([]byte(k), []byte("v:"+k)); err != nil {
				return err
			}
		}
		return tx.Delete([]byte("other"))
	})
	if v, err := h.get("pid/a/1"); err != nil || v != "v:pid/a/1" {
		t.Fatalf("get: %q %v", v, err)
	}
	if _, err := h.get("other"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("deleted key: %v", err)
	}
	var keys []string
	h.view(func(tx store.ReadTx) error {
		return tx.Scan([]byte("pid/b/"), func(k, v []byte) error {
			keys = append(keys, string(k))
			return nil
		})
	})
	if fmt.Sprint(keys) != "[pid/b/1 pid/b/2]" {
		t.Fatalf("scan pid/b/: %v", keys)
	}
	// The transaction stays usable inside a scan.
	h.update(func(tx store.Tx) error {
		return tx.Scan([]byte("pid/b/"), func(k, v []byte) error {
			if _, err := tx.Get([]byte("pid/a/1")); err != nil {
				return err
			}
			if _, err := tx.Add([]byte("scanned"), 1, 10); err != nil {
				return err
			}
			return tx.Put(append([]byte("copy/"), k...), v)
		})
	})
	if v, err := h.get("copy/pid/b/2"); err != nil || v != "v:pid/b/2" || h.counter("scanned") != 2 {
		t.Fatalf("writes inside a scan: %q %v %d", v, err, h.counter("scanned"))
	}
	stop := errors.New("stop")
	n := 0
	err := h.s.View(context.Background(), func(tx store.ReadTx) error {
		return tx.Scan([]byte("pid/"), func(k, v []byte) error { n++; return stop })
	})
	if !errors.Is(err, stop) || n != 1 {
		t.Fatalf("scan did not stop at the first error: n=%d err=%v", n, err)
	}
}

func testFailedUpdateCommitsNothing(t *testing.T, h *harness) {
	boom := errors.New("boom")
	err := h.s.Update(context.Background(), func(tx store.Tx) error {
		if err := tx.Put([]byte("k"), []byte("v")); err != nil {
			return err
		}
		if _, err := tx.Add([]byte("c"), 5, 10); err != nil {
			return err
		}
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("Update returned %v, want the callback's error", err)
	}
	if _, err := h.get("k"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("value of a failed update is visible: %v", err)
	}
	if n := h.counter("c"); n != 0 {
		t.Fatalf("counter of a failed update is %d", n)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := h.s.Update(ctx, func(tx store.Tx) error { return tx.Put([]byte("k"), nil) }); !errors.Is(err, context.Canceled) {
		t.Fatalf("update with a cancelled context: %v", err)
	}
}

func testPutOnce(t *testing.T, h *harness) {
	h.update(func(tx store.Tx) error { return tx.PutOnce([]byte("result"), []byte("42")) })
	h.update(func(tx store.Tx) error { return tx.PutOnce([]byte("result"), []byte("42")) }) // replay
	err := h.s.Update(context.Background(), func(tx store.Tx) error {
		if err := tx.Put([]byte("side"), []byte("x")); err != nil {
			return err
		}
		return tx.PutOnce([]byte("result"), []byte("43"))
	})
	if !errors.Is(err, store.ErrConflict) {
		t.Fatalf("different value: %v", err)
	}
	if v, _ := h.get("result"); v != "42" {
		t.Fatalf("write-once value changed to %q", v)
	}
	if _, err := h.get("side"); !errors.Is(err, store.ErrNotFound) {
		t.Fatal("a conflicting update committed its other writes")
	}
}

func testCounters(t *testing.T, h *harness) {
	h.update(func(tx store.Tx) error {
		for _, d := range []int64{3, 4, -2} {
			if _, err := tx.Add([]byte("n"), d, 10); err != nil {
				return err
			}
		}
		return tx.Put([]byte("n"), []byte("a value, not the counter"))
	})
	if n := h.counter("n"); n != 5 {
		t.Fatalf("counter = %d, want 5", n)
	}
	if n := h.counter("absent"); n != 0 {
		t.Fatalf("absent counter = %d", n)
	}
	for _, d := range []int64{6, -6} {
		err := h.s.Update(context.Background(), func(tx store.Tx) error {
			_, err := tx.Add([]byte("n"), d, 10)
			return err
		})
		if !errors.Is(err, store.ErrOverflow) {
			t.Errorf("add %d to 5 with max 10: %v", d, err)
		}
	}
	if n := h.counter("n"); n != 5 {
		t.Fatalf("counter after refused adds = %d", n)
	}
	var seen []string
	h.view(func(tx store.ReadTx) error {
		return tx.ScanCounters([]byte("n"), func(k []byte, v int64) error {
			seen = append(seen, fmt.Sprintf("%s=%d", k, v))
			return nil
		})
	})
	if fmt.Sprint(seen) != "[n=5]" {
		t.Fatalf("scan counters: %v", seen)
	}
}

// testHeldBackWrites covers the writes a backend may send late (see
// store.Tx): the transaction reads them back at once, an answered
// operation after them sees them, and a late error fails the whole
// Update, whichever operation it surfaces from.
func testHeldBackWrites(t *testing.T, h *harness) {
	h.update(func(tx store.Tx) error {
		if err := tx.Put([]byte("w"), []byte("1")); err != nil {
			return err
		}
		if err := tx.Bump([]byte("c"), 4, 10); err != nil {
			return err
		}
		if v, err := tx.Get([]byte("w")); err != nil || string(v) != "1" {
			return fmt.Errorf("read back a held write: %q %v", v, err)
		}
		if n, err := tx.Add([]byte("c"), 3, 10); err != nil || n != 7 {
			return fmt.Errorf("add after a held bump = %d, %v; want 7", n, err)
		}
		// A refused Add answers at once and leaves the transaction usable.
		if _, err := tx.Add([]byte("c"), 5, 10); !errors.Is(err, store.ErrOverflow) {
			return fmt.Errorf("refused add: %v", err)
		}
		if err := tx.Delete([]byte("w")); err != nil {
			return err
		}
		return tx.Bump([]byte("c"), 1, 10)
	})
	if n := h.counter("c"); n != 8 {
		t.Fatalf("counter = %d, want 8", n)
	}
	if _, err := h.get("w"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("a held delete did not commit: %v", err)
	}
	for _, tc := range []struct {
		name string
		last func(tx store.Tx) error
		want error
	}{
		{"bump past max", func(tx store.Tx) error { return tx.Bump([]byte("c"), 3, 10) }, store.ErrOverflow},
		{"bump below zero", func(tx store.Tx) error { return tx.Bump([]byte("c"), -9, 10) }, store.ErrOverflow},
		{"two bumps past max", func(tx store.Tx) error { return bumps(tx, "c", 10, 1, 2) }, store.ErrOverflow},
		{"a bump below zero, then back", func(tx store.Tx) error { return bumps(tx, "c", 10, -9, 5) }, store.ErrOverflow},
		{"a bump past max, then back", func(tx store.Tx) error { return bumps(tx, "c", 10, 3, -5) }, store.ErrOverflow},
		{"put-once of another value", func(tx store.Tx) error { return tx.PutOnce([]byte("once"), []byte("b")) }, store.ErrConflict},
	} {
		h.update(func(tx store.Tx) error { return tx.PutOnce([]byte("once"), []byte("a")) })
		err := h.s.Update(context.Background(), func(tx store.Tx) error {
			if err := tx.Put([]byte("side"), []byte("x")); err != nil {
				return err
			}
			if err := tc.last(tx); err != nil {
				return err
			}
			_, err := tx.Counter([]byte("c")) // the late error may surface here, or at commit
			return err
		})
		if !errors.Is(err, tc.want) {
			t.Errorf("%s: update returned %v, want %v", tc.name, err, tc.want)
		}
		if _, err := h.get("side"); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("%s: the failed update committed its other writes", tc.name)
		}
	}
	if n := h.counter("c"); n != 8 {
		t.Fatalf("counter after refused bumps = %d, want 8", n)
	}
	h.update(func(tx store.Tx) error { return bumps(tx, "c", 10, 1, 1, -5, -3, 7) })
	if n := h.counter("c"); n != 9 {
		t.Fatalf("counter after bumps within range = %d, want 9", n)
	}
}

// bumps bumps the counter key by each of deltas in turn, within [0, max].
func bumps(tx store.Tx, key string, max int64, deltas ...int64) error {
	for _, d := range deltas {
		if err := tx.Bump([]byte(key), d, max); err != nil {
			return err
		}
	}
	return nil
}

func testCollate(t *testing.T, h *harness) {
	const weight = 100_000_000_000
	h.update(func(tx store.Tx) error {
		_, err := tx.Add([]byte("sem"), 2, 1<<40)
		return err
	})
	var hits []bool
	for _, delta := range []int64{1, -1, -2} { // 3, 2, 0
		h.update(func(tx store.Tx) error {
			hit, err := tx.Collate(store.Collation{Semaphore: []byte("sem"), Delta: delta, GUID: []byte(fmt.Sprintf("guid%d", delta)), Weight: weight})
			hits = append(hits, hit)
			return err
		})
	}
	if fmt.Sprint(hits) != "[false false true]" {
		t.Fatalf("threshold hits %v", hits)
	}
	if h.counter("sem") != 0 || h.counter("guid1") != 0 || h.counter("guid-1") != 0 || h.counter("guid-2") != weight {
		t.Fatalf("sem=%d guids=%d,%d,%d", h.counter("sem"), h.counter("guid1"), h.counter("guid-1"), h.counter("guid-2"))
	}
	// The semaphore never goes below zero.
	err := h.s.Update(context.Background(), func(tx store.Tx) error {
		_, err := tx.Collate(store.Collation{Semaphore: []byte("sem"), Delta: -1, GUID: []byte("g"), Weight: weight})
		return err
	})
	if !errors.Is(err, store.ErrOverflow) {
		t.Fatalf("semaphore below zero: %v", err)
	}
	// Reads along with a collation that hits see what the collation did,
	// and read what is absent as absent; a miss reads nothing.
	h.update(func(tx store.Tx) error {
		if err := tx.Put([]byte("meta"), []byte("m")); err != nil {
			return err
		}
		if _, err := tx.Add([]byte("sem2"), 2, 1<<40); err != nil {
			return err
		}
		c := store.Collation{Semaphore: []byte("sem2"), Delta: -1, GUID: []byte("guid2"), Weight: weight}
		keys, counters := [][]byte{[]byte("meta"), []byte("none")}, [][]byte{[]byte("guid2"), []byte("sem2")}
		hit, values, ns, err := tx.CollateAndRead(c, keys, counters)
		if err != nil || hit || values != nil || ns != nil {
			t.Errorf("collate and read, a miss: hit %v, values %q, counters %v, %v; want false, nothing read", hit, values, ns, err)
		}
		hit, values, ns, err = tx.CollateAndRead(c, keys, counters)
		if err != nil {
			return err
		}
		if !hit || string(values[0]) != "m" || values[1] != nil || ns[0] != weight || ns[1] != 0 {
			t.Errorf("collate and read: hit %v, values %q, counters %v; want true, [m <nil>], [%d 0]", hit, values, ns, int64(weight))
		}
		return nil
	})
}

func testStreamDelivery(t *testing.T, h *harness) {
	if _, err := h.reserve("s", time.Minute); !errors.Is(err, store.ErrEmpty) {
		t.Fatalf("empty stream: %v", err)
	}
	h.update(func(tx store.Tx) error {
		for i := byte(1); i <= 3; i++ {
			m := store.Message{ID: id(i), Stream: "s", Job: []byte("job"), Payload: []byte{i}}
			if i == 2 {
				m.NotBefore = h.clock.Now().Add(time.Hour) // delayed
			}
			if err := tx.Enqueue(m); err != nil {
				return err
			}
		}
		return tx.Enqueue(store.Message{ID: id(9), Stream: "s2", Payload: []byte("other stream")})
	})
	var got []byte
	h.reserveEach("s", func(m store.Message) {
		if m.Attempt != 1 || string(m.Job) != "job" {
			t.Fatalf("message %+v", m)
		}
		got = append(got, m.Payload...)
		h.update(func(tx store.Tx) error { return tx.Ack(m.Receipt) })
	})
	if fmt.Sprint(got) != "[1 3]" {
		t.Fatalf("delivered %v, want [1 3] (2 is delayed)", got)
	}
	h.clock.Advance(time.Hour)
	m, err := h.reserve("s", time.Minute)
	if err != nil || m.Payload[0] != 2 {
		t.Fatalf("delayed message: %+v %v", m, err)
	}
	var pending []store.Message
	h.view(func(tx store.ReadTx) error {
		var err error
		pending, err = tx.Pending("s")
		return err
	})
	if len(pending) != 1 || pending[0].ID != id(2) {
		t.Fatalf("pending %v", pending)
	}
}

func testStreamVisibilityTimeout(t *testing.T, h *harness) {
	h.update(func(tx store.Tx) error {
		return tx.Enqueue(store.Message{ID: id(1), Stream: "s", Payload: []byte("p")})
	})
	first, err := h.reserve("s", 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.reserve("s", 30*time.Second); !errors.Is(err, store.ErrEmpty) {
		t.Fatalf("reserved message visible: %v", err)
	}
	h.clock.Advance(31 * time.Second)
	second, err := h.reserve("s", 30*time.Second)
	if err != nil || second.Attempt != 2 {
		t.Fatalf("redelivery after timeout: %+v %v", second, err)
	}
	err = h.s.Update(context.Background(), func(tx store.Tx) error { return tx.Ack(first.Receipt) })
	if !errors.Is(err, store.ErrStaleReceipt) {
		t.Fatalf("ack with the first, timed-out receipt: %v", err)
	}
	h.update(func(tx store.Tx) error { return tx.Ack(second.Receipt) })
	h.clock.Advance(time.Hour)
	if _, err := h.reserve("s", time.Second); !errors.Is(err, store.ErrEmpty) {
		t.Fatalf("acknowledged message came back: %v", err)
	}
	err = h.s.Update(context.Background(), func(tx store.Tx) error { return tx.Ack(second.Receipt) })
	if !errors.Is(err, store.ErrStaleReceipt) {
		t.Fatalf("second ack: %v", err)
	}
}

func testStreamNackAndDeadLetter(t *testing.T, h *harness) {
	h.update(func(tx store.Tx) error {
		return tx.Enqueue(store.Message{ID: id(1), Stream: "s", Payload: []byte("p")})
	})
	m, _ := h.reserve("s", time.Minute)
	h.update(func(tx store.Tx) error { return tx.Nack(m.Receipt, 10*time.Second) })
	err := h.s.Update(context.Background(), func(tx store.Tx) error { return tx.Ack(m.Receipt) })
	if !errors.Is(err, store.ErrStaleReceipt) {
		t.Fatalf("ack with a receipt spent by nack: %v", err)
	}
	// Settle with the spent receipt changes nothing and fails nothing.
	h.update(func(tx store.Tx) error {
		if err := tx.Settle(m.Receipt); err != nil {
			return err
		}
		return tx.Put([]byte("after-stale-settle"), []byte("x"))
	})
	if _, err := h.get("after-stale-settle"); err != nil {
		t.Fatalf("a stale settle failed its update: %v", err)
	}
	if _, err := h.reserve("s", time.Minute); !errors.Is(err, store.ErrEmpty) {
		t.Fatalf("nacked message visible before its delay: %v", err)
	}
	h.clock.Advance(10 * time.Second)
	m2, err := h.reserve("s", time.Minute)
	if err != nil || m2.Attempt != 2 {
		t.Fatalf("after nack delay: %+v %v", m2, err)
	}
	h.update(func(tx store.Tx) error { return tx.DeadLetter(m2.Receipt, "poison: bad payload") })
	if _, err := h.reserve("s", time.Minute); !errors.Is(err, store.ErrEmpty) {
		t.Fatalf("dead-lettered message still on its stream: %v", err)
	}
	d, err := h.reserve("s"+store.DeadLetterSuffix, time.Minute)
	if err != nil || d.Reason != "poison: bad payload" || string(d.Payload) != "p" {
		t.Fatalf("dead letter: %+v %v", d, err)
	}
	// Settle with a current receipt acknowledges.
	h.update(func(tx store.Tx) error { return tx.Settle(d.Receipt) })
	h.view(func(tx store.ReadTx) error {
		if p, err := tx.Pending("s" + store.DeadLetterSuffix); err != nil || len(p) != 0 {
			t.Errorf("pending after settle: %v %v", p, err)
		}
		return nil
	})
}

// testPendingReceiptSettles: a message Pending lists can be acknowledged
// with the receipt it carries (how an operator settles a dead letter),
// once, and not after a reservation changed it.
func testPendingReceiptSettles(t *testing.T, h *harness) {
	h.update(func(tx store.Tx) error {
		if err := tx.Enqueue(store.Message{ID: id(1), Stream: "s", Payload: []byte("dead")}); err != nil {
			return err
		}
		return tx.Enqueue(store.Message{ID: id(2), Stream: "s", Payload: []byte("live")})
	})
	m, _ := h.reserve("s", time.Minute)
	h.update(func(tx store.Tx) error { return tx.DeadLetter(m.Receipt, "poison") })
	pending := func(stream string) []store.Message {
		var ms []store.Message
		h.view(func(tx store.ReadTx) (err error) {
			ms, err = tx.Pending(stream)
			return err
		})
		if len(ms) != 1 {
			t.Fatalf("pending on %s: %v, want one message", stream, ms)
		}
		return ms
	}
	dead := pending("s" + store.DeadLetterSuffix)[0]
	live := pending("s")[0]
	h.update(func(tx store.Tx) error { return tx.Ack(dead.Receipt) })
	err := h.s.Update(context.Background(), func(tx store.Tx) error { return tx.Ack(dead.Receipt) })
	if !errors.Is(err, store.ErrStaleReceipt) {
		t.Fatalf("second ack of a settled dead letter: %v, want ErrStaleReceipt", err)
	}
	if _, err := h.reserve("s", time.Minute); err != nil {
		t.Fatal(err)
	}
	err = h.s.Update(context.Background(), func(tx store.Tx) error { return tx.Ack(live.Receipt) })
	if !errors.Is(err, store.ErrStaleReceipt) {
		t.Fatalf("ack with a receipt listed before a reservation: %v, want ErrStaleReceipt", err)
	}
	h.view(func(tx store.ReadTx) error {
		if p, err := tx.Pending("s" + store.DeadLetterSuffix); err != nil || len(p) != 0 {
			t.Errorf("dead letters after the ack: %v %v", p, err)
		}
		return nil
	})
}

func testEnqueueIsIdempotent(t *testing.T, h *harness) {
	for range 3 {
		h.update(func(tx store.Tx) error {
			return tx.Enqueue(store.Message{ID: id(1), Stream: "s", Payload: []byte("p")})
		})
	}
	m, err := h.reserve("s", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	h.update(func(tx store.Tx) error { return tx.Ack(m.Receipt) })
	h.update(func(tx store.Tx) error { // a replayed publish after the ack
		return tx.Enqueue(store.Message{ID: id(1), Stream: "s", Payload: []byte("p")})
	})
	if _, err := h.reserve("s", time.Minute); !errors.Is(err, store.ErrEmpty) {
		t.Fatalf("duplicate publish delivered again: %v", err)
	}
}

// testPurgeAcked: PurgeAcked forgets acknowledgements older than its
// horizon, at most max a call, oldest first where the backend orders
// them, never a pending, a younger or a dead-lettered message; a
// forgotten id can be published again.
func testPurgeAcked(t *testing.T, h *harness) {
	ctx := context.Background()
	publish := func(ns ...byte) {
		h.update(func(tx store.Tx) error {
			for _, n := range ns {
				if err := tx.Enqueue(store.Message{ID: id(n), Stream: "s", Payload: []byte{n}}); err != nil {
					return err
				}
			}
			return nil
		})
	}
	ack := func() {
		m, err := h.reserve("s", time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		h.update(func(tx store.Tx) error { return tx.Ack(m.Receipt) })
	}
	publish(1, 2, 3, 4, 5, 6)
	for range 3 { // 1, 2 and 3, an hour ago
		ack()
	}
	h.clock.Advance(time.Hour)
	horizon := h.clock.Now()
	ack() // 4, now
	m5, err := h.reserve("s", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	h.update(func(tx store.Tx) error { return tx.DeadLetter(m5.Receipt, "poison") })
	h.clock.Advance(time.Hour)
	// 6 stays pending; an acknowledged message of another stream is not
	// this stream's.
	h.update(func(tx store.Tx) error {
		return tx.Enqueue(store.Message{ID: id(9), Stream: "other", Payload: []byte("o")})
	})
	o, err := h.reserve("other", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	h.update(func(tx store.Tx) error { return tx.Ack(o.Receipt) })

	var forgot int
	for range 4 {
		n, err := h.s.PurgeAcked(ctx, "s", horizon, 2)
		if err != nil {
			t.Fatal(err)
		}
		if n > 2 {
			t.Fatalf("one call forgot %d messages, more than its max of 2", n)
		}
		forgot += n
	}
	if forgot != 3 {
		t.Fatalf("forgot %d messages acknowledged before the horizon, want 3", forgot)
	}
	// Publishing every id again: the forgotten come back, the rest do not.
	publish(1, 2, 3, 4, 5, 6)
	h.update(func(tx store.Tx) error {
		return tx.Enqueue(store.Message{ID: id(9), Stream: "other", Payload: []byte("o")})
	})
	var got []byte
	h.reserveEach("s", func(m store.Message) { got = append(got, m.ID[15]) })
	slices.Sort(got)
	if !slices.Equal(got, []byte{1, 2, 3, 6}) {
		t.Fatalf("after the purge, publishing again delivered %v, want [1 2 3 6]", got)
	}
	if _, err := h.reserve("other", time.Minute); !errors.Is(err, store.ErrEmpty) {
		t.Fatalf("a purge of s forgot a message of another stream: %v", err)
	}
	var dead []store.Message
	h.view(func(tx store.ReadTx) error {
		dead, err = tx.Pending("s" + store.DeadLetterSuffix)
		return err
	})
	if len(dead) != 1 || dead[0].ID != id(5) {
		t.Fatalf("dead letters after the purge: %v", dead)
	}
}

// testDeletePrefix: DeletePrefix removes values and counters under a
// prefix, at most max a call, including what the same transaction wrote
// just before, and nothing outside the prefix.
func testDeletePrefix(t *testing.T, h *harness) {
	h.update(func(tx store.Tx) error {
		for _, k := range []string{"a/1", "a/2", "a/3", "a/4", "a/5", "a", "ab/1", "b/1"} {
			if err := tx.Put([]byte(k), []byte("v")); err != nil {
				return err
			}
		}
		for _, k := range []string{"a/x", "a/y", "b/x"} {
			if err := tx.Bump([]byte(k), 7, 100); err != nil {
				return err
			}
		}
		return nil
	})
	var calls []int
	for {
		var n int
		h.update(func(tx store.Tx) error {
			// A write held back in this transaction is under the prefix too.
			if err := tx.Put([]byte("a/6"), []byte("late")); err != nil {
				return err
			}
			if err := tx.Bump([]byte("a/z"), 1, 100); err != nil {
				return err
			}
			var err error
			n, err = tx.DeletePrefix([]byte("a/"), 3)
			return err
		})
		calls = append(calls, n)
		if n < 3 || len(calls) == 5 {
			break
		}
	}
	// Each call puts a/6 and a/z back and removes three, until fewer
	// than three are left.
	for i, n := range calls[:len(calls)-1] {
		if n != 3 {
			t.Fatalf("call %d removed %d, want 3 (calls %v)", i, n, calls)
		}
	}
	h.update(func(tx store.Tx) error {
		n, err := tx.DeletePrefix([]byte("a/"), 100)
		if err == nil && n != 0 {
			return fmt.Errorf("a last call removed %d, want 0", n)
		}
		return err
	})
	for _, k := range []string{"a/1", "a/5", "a/6"} {
		if _, err := h.get(k); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("%s after DeletePrefix: %v", k, err)
		}
	}
	for _, k := range []string{"a/x", "a/z"} {
		if n := h.counter(k); n != 0 {
			t.Errorf("counter %s after DeletePrefix: %d", k, n)
		}
	}
	for _, k := range []string{"a", "ab/1", "b/1"} {
		if v, err := h.get(k); err != nil || v != "v" {
			t.Errorf("%s outside the prefix: %q %v", k, v, err)
		}
	}
	if n := h.counter("b/x"); n != 7 {
		t.Errorf("counter b/x outside the prefix: %d", n)
	}
}

// testDeleteLease: a deleted lease is gone; its holder is fenced.
func testDeleteLease(t *testing.T, h *harness) {
	a, err := acquire(h, "job", "A", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	h.update(func(tx store.Tx) error { return tx.DeleteLease([]byte("job")) })
	h.update(func(tx store.Tx) error { return tx.DeleteLease([]byte("never leased")) })
	h.view(func(tx store.ReadTx) error {
		if _, err := tx.Lease([]byte("job")); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("lease after its deletion: %v", err)
		}
		return nil
	})
	err = h.s.Update(context.Background(), func(tx store.Tx) error { return tx.Fence(a) })
	if !errors.Is(err, store.ErrFenced) {
		t.Fatalf("the holder of a deleted lease was not fenced: %v", err)
	}
}

func testEnqueueInFailedUpdate(t *testing.T, h *harness) {
	_ = h.s.Update(context.Background(), func(tx store.Tx) error {
		if err := tx.Enqueue(store.Message{ID: id(1), Stream: "s"}); err != nil {
			return err
		}
		return errors.New("crash before commit")
	})
	if _, err := h.reserve("s", time.Minute); !errors.Is(err, store.ErrEmpty) {
		t.Fatalf("message of a failed update was published: %v", err)
	}
}

// testEnqueueReserved: a message published reserved is the first
// delivery of a message published and reserved; its receipt works in the
// publishing transaction and after it; it comes back when its visibility
// runs out, and an id published before (or earlier in the same
// transaction) fails the publishing transaction.
func testEnqueueReserved(t *testing.T, h *harness) {
	publish := func(tx store.Tx, n byte) (store.Message, error) {
		return tx.EnqueueReserved(store.Message{ID: id(n), Stream: "s", Job: []byte("j"), Payload: []byte{'0' + n}}, "w1", time.Minute)
	}
	var kept, nacked store.Message
	h.update(func(tx store.Tx) error {
		m, err := publish(tx, 1)
		if err != nil {
			return err
		}
		if m.Attempt != 1 || m.Receipt.ID != id(1) || string(m.Payload) != "1" {
			return fmt.Errorf("published reserved: %+v", m)
		}
		if err := tx.Settle(m.Receipt); err != nil { // taken on and done in one commit
			return err
		}
		if kept, err = publish(tx, 2); err != nil {
			return err
		}
		if nacked, err = publish(tx, 3); err != nil {
			return err
		}
		return tx.Nack(nacked.Receipt, 10*time.Second)
	})
	if _, err := h.reserve("s", time.Minute); !errors.Is(err, store.ErrEmpty) {
		t.Fatalf("a message published reserved was delivered before its visibility ran out: %v", err)
	}
	h.clock.Advance(11 * time.Second)
	m, err := h.reserve("s", time.Minute)
	if err != nil || string(m.Payload) != "3" || m.Attempt != 2 {
		t.Fatalf("after the nack: %q attempt %d (%v), want the nacked message at attempt 2", m.Payload, m.Attempt, err)
	}
	h.update(func(tx store.Tx) error { return tx.Ack(m.Receipt) })
	h.update(func(tx store.Tx) error { return tx.Ack(kept.Receipt) }) // after its publishing commit
	h.clock.Advance(time.Hour)
	if _, err := h.reserve("s", time.Minute); !errors.Is(err, store.ErrEmpty) {
		t.Fatalf("acknowledged messages came back: %v", err)
	}
	h.update(func(tx store.Tx) error { return tx.Enqueue(store.Message{ID: id(4), Stream: "s"}) })
	for _, n := range []byte{1, 4} { // acknowledged, and pending
		err := h.s.Update(context.Background(), func(tx store.Tx) error {
			if _, err := publish(tx, n); err != nil {
				return err
			}
			return tx.Put([]byte("after"), []byte("x"))
		})
		if !errors.Is(err, store.ErrConflict) {
			t.Fatalf("publishing reserved the published id %d: %v, want ErrConflict", n, err)
		}
		if _, err := h.get("after"); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("the refused publish committed its transaction: %v", err)
		}
	}
	// Published reserved twice in one transaction: refused the same way.
	err = h.s.Update(context.Background(), func(tx store.Tx) error {
		if _, err := publish(tx, 6); err != nil {
			return err
		}
		_, err := publish(tx, 6)
		return err
	})
	if !errors.Is(err, store.ErrConflict) {
		t.Fatalf("publishing reserved one id twice in a transaction: %v, want ErrConflict", err)
	}
	// Left to run out, the reservation comes back as a second attempt.
	h.update(func(tx store.Tx) error {
		_, err := publish(tx, 5)
		return err
	})
	h.clock.Advance(2 * time.Minute)
	for {
		m, err := h.reserve("s", time.Minute)
		if err != nil {
			t.Fatalf("the abandoned reservation did not come back: %v", err)
		}
		h.update(func(tx store.Tx) error { return tx.Ack(m.Receipt) })
		if m.ID == id(5) {
			if m.Attempt != 2 {
				t.Fatalf("the abandoned reservation came back at attempt %d, want 2", m.Attempt)
			}
			break
		}
	}
}

func acquire(h *harness, job, owner string, ttl time.Duration) (store.Lease, error) {
	var l store.Lease
	err := h.s.Update(context.Background(), func(tx store.Tx) error {
		var err error
		l, err = tx.AcquireLease([]byte(job), owner, ttl)
		return err
	})
	return l, err
}

func testLeases(t *testing.T, h *harness) {
	a, err := acquire(h, "job", "A", 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := acquire(h, "job", "B", 10*time.Second); !errors.Is(err, store.ErrLeaseHeld) {
		t.Fatalf("B took a live lease: %v", err)
	}
	renewed, err := acquire(h, "job", "A", 10*time.Second)
	if err != nil || renewed.Token != a.Token {
		t.Fatalf("renewal changed the token: %+v %v", renewed, err)
	}
	h.clock.Advance(11 * time.Second)
	b, err := acquire(h, "job", "B", 10*time.Second)
	if err != nil || b.Token <= a.Token {
		t.Fatalf("B after expiry: %+v %v", b, err)
	}
	var cur store.Lease
	h.view(func(tx store.ReadTx) error {
		var err error
		cur, err = tx.Lease([]byte("job"))
		return err
	})
	if cur.Owner != "B" || cur.Token != b.Token {
		t.Fatalf("current lease %+v", cur)
	}
	h.update(func(tx store.Tx) error { return tx.ReleaseLease(b) })
	c, err := acquire(h, "job", "C", time.Second)
	if err != nil || c.Token <= b.Token {
		t.Fatalf("C after release: %+v %v", c, err)
	}
	h.update(func(tx store.Tx) error { return tx.ReleaseLease(a) }) // stale release is harmless
	if _, err := acquire(h, "job", "D", time.Second); !errors.Is(err, store.ErrLeaseHeld) {
		t.Fatalf("a stale release freed C's lease: %v", err)
	}
}

// testLeaseInOneTransaction: a transaction reads its own lease writes
// back, whatever it read before them: a take, a release, a takeover and a
// deletion each change what Lease and AcquireLease see next in the same
// transaction. (A refused fence may fail the transaction only when it
// commits, so the fences are checked after it.)
func testLeaseInOneTransaction(t *testing.T, h *harness) {
	job := []byte("job")
	var a, b store.Lease
	h.update(func(tx store.Tx) error {
		if _, err := tx.Lease(job); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("lease before any: %v", err)
		}
		var err error
		if a, err = tx.AcquireLease(job, "A", 10*time.Second); err != nil {
			return err
		}
		if err := tx.Fence(a); err != nil {
			return err
		}
		if cur, err := tx.Lease(job); err != nil || cur.Owner != "A" || cur.Token != a.Token {
			t.Errorf("lease after A took it: %+v %v", cur, err)
		}
		if _, err := tx.AcquireLease(job, "B", 10*time.Second); !errors.Is(err, store.ErrLeaseHeld) {
			t.Errorf("B took A's live lease in the same transaction: %v", err)
		}
		if err := tx.ReleaseLease(a); err != nil {
			return err
		}
		if cur, err := tx.Lease(job); err != nil || !cur.Expires.Before(h.clock.Now()) {
			t.Errorf("lease after A released it: %+v %v", cur, err)
		}
		if b, err = tx.AcquireLease(job, "B", 10*time.Second); err != nil || b.Token <= a.Token {
			t.Errorf("B after A's release: %+v %v", b, err)
		}
		if cur, err := tx.Lease(job); err != nil || cur.Owner != "B" || cur.Token != b.Token {
			t.Errorf("lease after B took it over: %+v %v", cur, err)
		}
		if err := tx.DeleteLease(job); err != nil {
			return err
		}
		if _, err := tx.Lease(job); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("lease after its deletion: %v", err)
		}
		return nil
	})
	for _, l := range []store.Lease{a, b} {
		err := h.s.Update(context.Background(), func(tx store.Tx) error { return tx.Fence(l) })
		if !errors.Is(err, store.ErrFenced) {
			t.Errorf("%s's lease, deleted, still fences: %v", l.Owner, err)
		}
	}
}

func testFencedCommit(t *testing.T, h *harness) {
	a, _ := acquire(h, "job", "A", 10*time.Second)
	h.clock.Advance(11 * time.Second) // A stalls past its lease
	if _, err := acquire(h, "job", "B", 10*time.Second); err != nil {
		t.Fatal(err)
	}
	err := h.s.Update(context.Background(), func(tx store.Tx) error {
		if err := tx.Fence(a); err != nil {
			return err
		}
		return tx.Put([]byte("pid/job/result"), []byte("from A"))
	})
	if !errors.Is(err, store.ErrFenced) {
		t.Fatalf("stale holder's commit: %v", err)
	}
	if _, err := h.get("pid/job/result"); !errors.Is(err, store.ErrNotFound) {
		t.Fatal("stale holder's write landed")
	}
}

func testConcurrentUpdates(t *testing.T, h *harness) {
	const workers, each = 8, 25
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				err := h.s.Update(context.Background(), func(tx store.Tx) error {
					if _, err := tx.Add([]byte("n"), 1, 1<<40); err != nil {
						return err
					}
					return tx.Put([]byte(fmt.Sprintf("w%d/%d", w, i)), []byte("x"))
				})
				if err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if n := h.counter("n"); n != workers*each {
		t.Fatalf("counter = %d, want %d (lost updates)", n, workers*each)
	}
}

func testConcurrentReserve(t *testing.T, h *harness) {
	const n = 60
	h.update(func(tx store.Tx) error {
		for i := range n {
			if err := tx.Enqueue(store.Message{ID: id(byte(i + 1)), Stream: "s"}); err != nil {
				return err
			}
		}
		return nil
	})
	var mu sync.Mutex
	seen := map[[16]byte]int{}
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				ms, err := reserveUpTo(h.s, "s", fmt.Sprintf("w%d", w), time.Hour, 1+w*3) // 1, 4, 7, 10 at a time
				if errors.Is(err, store.ErrEmpty) {
					return
				}
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				for _, m := range ms {
					seen[m.ID]++
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if len(seen) != n {
		t.Fatalf("%d distinct messages delivered, want %d", len(seen), n)
	}
	for mid, c := range seen {
		if c != 1 {
			t.Errorf("message %x delivered %d times within its visibility timeout", mid, c)
		}
	}
}

func testDurableAcrossReopen(t *testing.T, h *harness) {
	h.update(func(tx store.Tx) error {
		if err := tx.Put([]byte("k"), []byte("v")); err != nil {
			return err
		}
		if _, err := tx.Add([]byte("c"), 7, 100); err != nil {
			return err
		}
		return tx.Enqueue(store.Message{ID: id(1), Stream: "s", Payload: []byte("p")})
	})
	if err := h.s.Close(); err != nil {
		t.Fatal(err)
	}
	h.open()
	if v, err := h.get("k"); err != nil || v != "v" {
		t.Fatalf("value after reopen: %q %v", v, err)
	}
	if h.counter("c") != 7 {
		t.Fatalf("counter after reopen: %d", h.counter("c"))
	}
	if m, err := h.reserve("s", time.Minute); err != nil || string(m.Payload) != "p" {
		t.Fatalf("message after reopen: %+v %v", m, err)
	}
}

// testNotify: a committed publish wakes the subscriber.
func testNotify(t *testing.T, h *harness) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ch, err := h.s.Notify(ctx, "s")
	if err != nil {
		t.Fatal(err)
	}
	h.update(func(tx store.Tx) error { return tx.Enqueue(store.Message{ID: id(1), Stream: "s"}) })
	select {
	case <-ch:
	case <-time.After(10 * time.Second):
		t.Fatal("no notification 10s after a committed publish")
	}
	cancel()
	for range ch { // the channel closes when ctx ends
	}
}

// testReadMany: values and counters in the order asked, nil for a missing
// key, empty (not nil) for an empty value, 0 for an absent counter, a
// repeated key answered twice, and what the same transaction wrote
// visible.
func testReadMany(t *testing.T, h *harness) {
	h.update(func(tx store.Tx) error {
		if err := tx.Put([]byte("a"), []byte("1")); err != nil {
			return err
		}
		if _, err := tx.Add([]byte("a"), 7, 10); err != nil { // a counter of the same name
			return err
		}
		return tx.Put([]byte("empty"), []byte{})
	})
	check := func(tx store.ReadTx, keys, counters []string, want []any, wantCounters []int64) {
		t.Helper()
		got, ns, err := tx.ReadMany(byteKeys(keys), byteKeys(counters))
		if err != nil || len(got) != len(want) || fmt.Sprint(ns) != fmt.Sprint(wantCounters) {
			t.Fatalf("ReadMany(%q, %q) = %q, %v, %v; want counters %v", keys, counters, got, ns, err, wantCounters)
		}
		for i, w := range want {
			switch {
			case w == nil && got[i] != nil:
				t.Errorf("ReadMany(%q)[%d] = %q, want nil (no value)", keys, i, got[i])
			case w != nil && (got[i] == nil || string(got[i]) != w.(string)):
				t.Errorf("ReadMany(%q)[%d] = %q (nil %v), want %q", keys, i, got[i], got[i] == nil, w)
			}
		}
	}
	h.view(func(tx store.ReadTx) error {
		check(tx, []string{"missing", "a", "empty", "a"}, []string{"a", "missing", "a"}, []any{nil, "1", "", "1"}, []int64{7, 0, 7})
		check(tx, nil, nil, nil, []int64{})
		return nil
	})
	h.update(func(tx store.Tx) error {
		if err := tx.Put([]byte("b"), []byte("2")); err != nil {
			return err
		}
		if err := tx.Delete([]byte("a")); err != nil {
			return err
		}
		if err := tx.Bump([]byte("a"), 1, 10); err != nil {
			return err
		}
		check(tx, []string{"a", "b"}, []string{"a"}, []any{nil, "2"}, []int64{8})
		return nil
	})
}

func byteKeys(keys []string) [][]byte {
	bs := make([][]byte, len(keys))
	for i, k := range keys {
		bs[i] = []byte(k)
	}
	return bs
}

// testPeek: Ready never says false while a message is visible; on a
// store with expensive commits, whose workers look before they reserve,
// it says false exactly when none is.
func testPeek(t *testing.T, h *harness) {
	exact := h.s.Capabilities().ExpensiveCommits
	ready := func(want bool, when string) {
		t.Helper()
		got, err := h.s.Ready(context.Background(), "s")
		if err != nil || (got != want && (want || exact)) {
			t.Fatalf("%s: ready %v (%v), want %v", when, got, err, want)
		}
	}
	ready(false, "empty stream")
	h.update(func(tx store.Tx) error { return tx.Enqueue(store.Message{ID: id(1), Stream: "other"}) })
	ready(false, "a message on another stream")
	h.update(func(tx store.Tx) error { return tx.Enqueue(store.Message{ID: id(2), Stream: "s"}) })
	ready(true, "a visible message")
	if _, err := h.reserve("s", time.Minute); err != nil {
		t.Fatal(err)
	}
	ready(false, "the only message reserved")
	h.clock.Advance(2 * time.Minute)
	ready(true, "its visibility timeout over")
}

// testFailingAmongConcurrent: Updates that fail while others commit
// concurrently (a group-committing backend puts them in one transaction)
// leave nothing, and roll back none of the others.
func testFailingAmongConcurrent(t *testing.T, h *harness) {
	const n = 24
	errBoom := errors.New("boom")
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = h.s.Update(context.Background(), func(tx store.Tx) error {
				if err := tx.Put([]byte(fmt.Sprintf("k%02d", i)), []byte("v")); err != nil {
					return err
				}
				if i%3 == 0 {
					return errBoom
				}
				return nil
			})
		}()
	}
	wg.Wait()
	for i := range n {
		_, err := h.get(fmt.Sprintf("k%02d", i))
		if i%3 == 0 {
			if !errors.Is(errs[i], errBoom) || !errors.Is(err, store.ErrNotFound) {
				t.Errorf("failing update %d: returned %v; its write: %v", i, errs[i], err)
			}
		} else if errs[i] != nil || err != nil {
			t.Errorf("update %d: returned %v; its write: %v", i, errs[i], err)
		}
	}
}

func testReserveAffinity(t *testing.T, h *harness) {
	h.update(func(tx store.Tx) error {
		if err := tx.Enqueue(store.Message{ID: id(1), Stream: "s", Job: []byte("busy"), Payload: []byte("1")}); err != nil {
			return err
		}
		return tx.Enqueue(store.Message{ID: id(2), Stream: "s", Job: []byte("free"), Payload: []byte("2")})
	})
	if _, err := acquire(h, "busy", "other", 10*time.Second); err != nil {
		t.Fatal(err)
	}
	m, err := reserve(h.s, "s", "w1", time.Minute)
	if err != nil || string(m.Payload) != "2" {
		t.Fatalf("reserved %q (%v), want the message of the job nobody holds", m.Payload, err)
	}
	if _, err := reserve(h.s, "s", "w1", time.Minute); !errors.Is(err, store.ErrEmpty) {
		t.Fatalf("reserved a message of a job another owner holds: %v", err)
	}
	if m, err := reserve(h.s, "s", "other", time.Minute); err != nil || string(m.Payload) != "1" {
		t.Fatalf("the holder could not reserve its job's message: %q %v", m.Payload, err)
	}
}

// testPublishedUnderLease: what the lease holder publishes for its job in
// the transaction that fences on the lease goes to the holder; another
// owner gets it as soon as the lease is released, or once it runs out.
func testPublishedUnderLease(t *testing.T, h *harness) {
	for _, end := range []string{"released", "expired"} {
		job := "job-" + end
		l, err := acquire(h, job, "A", 10*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		h.update(func(tx store.Tx) error {
			if err := tx.Fence(l); err != nil {
				return err
			}
			return tx.Enqueue(store.Message{ID: id(byte(len(end))), Stream: "s-" + end, Job: []byte(job), Payload: []byte(end)})
		})
		if _, err := reserve(h.s, "s-"+end, "B", time.Minute); !errors.Is(err, store.ErrEmpty) {
			t.Fatalf("%s: B reserved a message A published under its live lease: %v", end, err)
		}
		if end == "released" {
			h.update(func(tx store.Tx) error { return tx.ReleaseLease(l) })
		} else {
			h.clock.Advance(11 * time.Second)
		}
		if m, err := reserve(h.s, "s-"+end, "B", time.Minute); err != nil || string(m.Payload) != end {
			t.Fatalf("%s: B could not take the message once A's lease %s: %q %v", end, end, m.Payload, err)
		}
	}
}

// testReserveSeveral: one Reserve takes up to its maximum of the visible
// messages, ordered by job and then ID, each with its own receipt, and
// skips jobs another owner holds and messages not yet visible.
func testReserveSeveral(t *testing.T, h *harness) {
	later := h.clock.Now().Add(time.Hour)
	h.update(func(tx store.Tx) error {
		for _, m := range []store.Message{
			{ID: id(1), Job: []byte("b"), Payload: []byte("b1")},
			{ID: id(2), Job: []byte("a"), Payload: []byte("a2")},
			{ID: id(3), Job: []byte("held"), Payload: []byte("held")},
			{ID: id(4), Job: []byte("a"), Payload: []byte("a4")},
			{ID: id(5), Job: []byte("c"), Payload: []byte("later"), NotBefore: later},
			{ID: id(6), Job: []byte("c"), Payload: []byte("c6")},
		} {
			m.Stream = "s"
			if err := tx.Enqueue(m); err != nil {
				return err
			}
		}
		return nil
	})
	if _, err := acquire(h, "held", "other", 10*time.Second); err != nil {
		t.Fatal(err)
	}
	first, err := reserveUpTo(h.s, "s", "w1", time.Minute, 3)
	if err != nil {
		t.Fatal(err)
	}
	second, err := reserveUpTo(h.s, "s", "w1", time.Minute, 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(first) != 3 || len(second) != 1 {
		t.Fatalf("took %d then %d messages, want 3 (the maximum) then 1 (the rest visible to w1)", len(first), len(second))
	}
	all := append(first, second...)
	var got []string
	receipts := map[store.Receipt]bool{}
	for _, m := range all {
		got = append(got, string(m.Payload))
		receipts[m.Receipt] = true
		if m.Attempt != 1 {
			t.Errorf("%s: attempt %d, want 1", m.Payload, m.Attempt)
		}
	}
	for i := 1; i < len(first); i++ {
		if a, b := first[i-1], first[i]; string(a.Job) > string(b.Job) || (string(a.Job) == string(b.Job) && string(a.ID[:]) > string(b.ID[:])) {
			t.Errorf("reserved %s before %s: not ordered by job and ID", a.Payload, b.Payload)
		}
	}
	slices.Sort(got)
	if want := []string{"a2", "a4", "b1", "c6"}; !slices.Equal(got, want) || len(receipts) != 4 {
		t.Fatalf("reserved %q with %d receipts, want %q, each its own", got, len(receipts), want)
	}
	if _, err := reserveUpTo(h.s, "s", "w1", time.Minute, 10); !errors.Is(err, store.ErrEmpty) {
		t.Fatalf("a third reserve: %v, want ErrEmpty", err)
	}
	h.update(func(tx store.Tx) error {
		for _, m := range all {
			if err := tx.Ack(m.Receipt); err != nil {
				return err
			}
		}
		return nil
	})
}

// testSettleWhereReserved: in the transaction that reserved them, one
// message is settled, one handed back and one dead-lettered, and one is
// left reserved. After the commit the settled one is gone for good, the
// one handed back is ready again with its attempt taken back, the dead
// one is on the dead stream, and the one left reserved is invisible until
// its visibility runs out, then delivered again as its second attempt;
// its first receipt is stale by then.
func testSettleWhereReserved(t *testing.T, h *harness) {
	h.update(func(tx store.Tx) error {
		for i := range 4 {
			if err := tx.Enqueue(store.Message{Stream: "s", ID: id(byte(i + 1)), Job: []byte{byte('a' + i)}, Payload: []byte{byte('0' + i)}}); err != nil {
				return err
			}
		}
		return nil
	})
	var kept store.Message
	h.update(func(tx store.Tx) error {
		ms, err := tx.Reserve(store.Claim{Stream: "s", Owner: "w1", Visibility: time.Minute, Max: 4})
		if err != nil || len(ms) != 4 {
			return fmt.Errorf("reserved %d: %v", len(ms), err)
		}
		if err := tx.Settle(ms[0].Receipt); err != nil {
			return err
		}
		if err := tx.Settle(ms[0].Receipt); err != nil { // settled already: nothing
			return err
		}
		if err := tx.Return(ms[1].Receipt, 0); err != nil {
			return err
		}
		if err := tx.DeadLetter(ms[2].Receipt, "poison"); err != nil {
			return err
		}
		kept = ms[3]
		return nil
	})
	var pending []store.Message
	h.update(func(tx store.Tx) error {
		var err error
		pending, err = tx.Pending("s")
		return err
	})
	if len(pending) != 2 || string(pending[0].Payload)+string(pending[1].Payload) != "13" && string(pending[0].Payload)+string(pending[1].Payload) != "31" {
		t.Fatalf("pending after the commit: %v, want the handed-back and the kept message", pending)
	}
	m, err := h.reserve("s", time.Minute)
	if err != nil || string(m.Payload) != "1" || m.Attempt != 1 {
		t.Fatalf("reserved %q attempt %d (%v), want the handed-back message at attempt 1", m.Payload, m.Attempt, err)
	}
	h.update(func(tx store.Tx) error { return tx.Ack(m.Receipt) })
	if _, err := h.reserve("s", time.Minute); !errors.Is(err, store.ErrEmpty) {
		t.Fatalf("the kept message was delivered before its visibility ran out: %v", err)
	}
	var dead []store.Message
	h.update(func(tx store.Tx) error {
		var err error
		dead, err = tx.Pending("s" + store.DeadLetterSuffix)
		return err
	})
	if len(dead) != 1 || string(dead[0].Payload) != "2" || dead[0].Reason != "poison" {
		t.Fatalf("dead letters %v, want the poisoned message", dead)
	}
	h.clock.Advance(2 * time.Minute)
	again, err := h.reserve("s", time.Minute)
	if err != nil || string(again.Payload) != "3" || again.Attempt != 2 {
		t.Fatalf("reserved %q attempt %d (%v), want the kept message at attempt 2", again.Payload, again.Attempt, err)
	}
	err = h.s.Update(context.Background(), func(tx store.Tx) error { return tx.Ack(kept.Receipt) })
	if !errors.Is(err, store.ErrStaleReceipt) {
		t.Fatalf("ack with the first receipt: %v, want ErrStaleReceipt", err)
	}
}

// testAtomically: on a store whose transactions have savepoints, a unit
// that fails (by its own error, a held-back write the backend refuses, or
// an answered operation) leaves nothing behind, and the units around it
// and the transaction itself commit.
func testAtomically(t *testing.T, h *harness) {
	errUnit := errors.New("the unit gives up")
	h.update(func(tx store.Tx) error { return tx.PutOnce([]byte("once"), []byte("first")) })
	if !h.s.Capabilities().Savepoints {
		// Without savepoints a unit is refused, and never half done.
		ran := false
		h.update(func(tx store.Tx) error {
			err := tx.Atomically(func(store.Tx) error { ran = true; return nil })
			if !errors.Is(err, store.ErrUnsupported) || ran {
				t.Errorf("Atomically without savepoints: %v (unit ran: %v), want ErrUnsupported and not run", err, ran)
			}
			return nil
		})
		return
	}
	var outcomes []error
	h.update(func(tx store.Tx) error {
		sp := tx
		outcomes = nil
		if err := tx.Put([]byte("outer/before"), []byte("1")); err != nil {
			return err
		}
		units := []func(tx store.Tx) error{
			func(tx store.Tx) error { // refused when sent, at the unit's end
				tx.Put([]byte("unit/refused"), []byte("x"))
				return tx.PutOnce([]byte("once"), []byte("second"))
			},
			func(tx store.Tx) error { // commits
				if err := tx.Bump([]byte("unit/counter"), 2, 10); err != nil {
					return err
				}
				return tx.Put([]byte("unit/kept"), []byte("y"))
			},
			func(tx store.Tx) error { // fails after the server saw its writes
				tx.Put([]byte("unit/abandoned"), []byte("z"))
				if _, err := tx.Add([]byte("unit/counter"), 1, 10); err != nil {
					return err
				}
				return errUnit
			},
			func(tx store.Tx) error { // an answered operation refused
				_, err := tx.Add([]byte("unit/counter"), 100, 10)
				return err
			},
			func(tx store.Tx) error { return nil }, // does nothing
		}
		for _, u := range units {
			outcomes = append(outcomes, sp.Atomically(u))
		}
		return tx.Put([]byte("outer/after"), []byte("2"))
	})
	// A write queued before a unit, refused when the unit's first
	// statement carries it, fails the transaction, not just the unit.
	err := h.s.Update(context.Background(), func(tx store.Tx) error {
		if err := tx.PutOnce([]byte("once"), []byte("third")); err != nil {
			return err
		}
		unitErr := tx.Atomically(func(tx store.Tx) error {
			_, err := tx.Add([]byte("unit/after-refusal"), 1, 10)
			return err
		})
		if !errors.Is(unitErr, store.ErrConflict) {
			t.Errorf("the unit after a refused write: %v, want its ErrConflict", unitErr)
		}
		return tx.Put([]byte("outer/after-refusal"), []byte("3"))
	})
	if !errors.Is(err, store.ErrConflict) {
		t.Errorf("the transaction with a refused write before its unit: %v, want ErrConflict", err)
	}
	if n := h.counter("unit/after-refusal"); n != 0 {
		t.Errorf("the unit after a refused write committed (counter %d)", n)
	}
	want := []error{store.ErrConflict, nil, errUnit, store.ErrOverflow, nil}
	for i, err := range outcomes {
		if !errors.Is(err, want[i]) || (want[i] == nil) != (err == nil) {
			t.Errorf("unit %d: %v, want %v", i, err, want[i])
		}
	}
	for k, want := range map[string]string{"outer/before": "1", "outer/after": "2", "unit/kept": "y", "once": "first"} {
		if v, err := h.get(k); err != nil || v != want {
			t.Errorf("%s: %q %v, want %q", k, v, err, want)
		}
	}
	for _, k := range []string{"unit/refused", "unit/abandoned"} {
		if _, err := h.get(k); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("%s: %v, want it undone with its unit", k, err)
		}
	}
	if n := h.counter("unit/counter"); n != 2 {
		t.Errorf("counter %d, want 2: only the committed unit's bump", n)
	}
}

// testScanMany: one read over several prefixes gives each prefix's values
// in key order, prefix by prefix as asked, sees the transaction's own
// writes, and handles prefixes with no finite end.
func testScanMany(t *testing.T, h *harness) {
	h.update(func(tx store.Tx) error {
		for _, k := range []string{"j/term/b", "j/fail/x", "j/term/a", "j/comp/1", "j/termination", "\xff\xffz", "k/term/a"} {
			if err := tx.Put([]byte(k), []byte("v:"+k)); err != nil {
				return err
			}
		}
		return nil
	})
	h.update(func(tx store.Tx) error {
		if err := tx.Put([]byte("j/term/c"), []byte("v:j/term/c")); err != nil { // held back on PostgreSQL
			return err
		}
		var got []string
		err := tx.ScanMany([][]byte{[]byte("j/term/"), []byte("j/none/"), []byte("j/fail/"), []byte("\xff\xff"), []byte("j/term/")},
			func(i int, k, v []byte) error {
				if string(v) != "v:"+string(k) {
					return fmt.Errorf("%s: value %q", k, v)
				}
				got = append(got, fmt.Sprintf("%d:%s", i, k))
				return nil
			})
		if err != nil {
			return err
		}
		want := []string{"0:j/term/a", "0:j/term/b", "0:j/term/c", "2:j/fail/x", "3:\xff\xffz", "4:j/term/a", "4:j/term/b", "4:j/term/c"}
		if !slices.Equal(got, want) {
			t.Errorf("scanned %q, want %q", got, want)
		}
		return nil
	})
}

// testReturn: a message given back untried is delivered again, after the
// delay, as the same attempt; its old receipt is spent.
func testReturn(t *testing.T, h *harness) {
	h.update(func(tx store.Tx) error {
		return tx.Enqueue(store.Message{ID: id(1), Stream: "s", Payload: []byte("x")})
	})
	m, err := h.reserve("s", time.Minute)
	if err != nil || m.Attempt != 1 {
		t.Fatalf("first delivery: attempt %d, %v", m.Attempt, err)
	}
	h.update(func(tx store.Tx) error { return tx.Return(m.Receipt, time.Second) })
	if _, err := h.reserve("s", time.Minute); !errors.Is(err, store.ErrEmpty) {
		t.Fatalf("reserved a returned message before its delay: %v", err)
	}
	h.clock.Advance(2 * time.Second)
	again, err := h.reserve("s", time.Minute)
	if err != nil || again.Attempt != 1 {
		t.Fatalf("after Return: attempt %d (%v), want 1 again", again.Attempt, err)
	}
	err = h.s.Update(context.Background(), func(tx store.Tx) error { return tx.Return(m.Receipt, 0) })
	if !errors.Is(err, store.ErrStaleReceipt) {
		t.Fatalf("Return with a spent receipt: %v, want ErrStaleReceipt", err)
	}
	h.update(func(tx store.Tx) error { return tx.Ack(again.Receipt) })
}

// testExtend: Extend keeps a reservation invisible past its first
// visibility with the same receipt and attempt, and its receipt stays the
// one that acknowledges; a spent receipt cannot extend.
func testExtend(t *testing.T, h *harness) {
	h.update(func(tx store.Tx) error {
		return tx.Enqueue(store.Message{ID: id(1), Stream: "s", Payload: []byte("x")})
	})
	m, err := h.reserve("s", 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		h.clock.Advance(20 * time.Second)
		h.update(func(tx store.Tx) error { return tx.Extend(m.Receipt, 30*time.Second) })
	}
	h.clock.Advance(20 * time.Second) // 80 s after a reservation for 30
	if got, err := h.reserve("s", time.Minute); !errors.Is(err, store.ErrEmpty) {
		t.Fatalf("an extended reservation was delivered again: %+v %v", got, err)
	}
	h.clock.Advance(11 * time.Second) // past the last extension
	again, err := h.reserve("s", time.Minute)
	if err != nil || again.Attempt != 2 {
		t.Fatalf("after the extension ran out: attempt %d (%v), want 2", again.Attempt, err)
	}
	err = h.s.Update(context.Background(), func(tx store.Tx) error { return tx.Extend(m.Receipt, time.Hour) })
	if !errors.Is(err, store.ErrStaleReceipt) {
		t.Fatalf("Extend with a spent receipt: %v, want ErrStaleReceipt", err)
	}
	h.update(func(tx store.Tx) error { return tx.Extend(again.Receipt, time.Hour) })
	h.update(func(tx store.Tx) error { return tx.Ack(again.Receipt) })
}

// testScanFirst: ScanFirst visits the first max values under a prefix in
// key order, a negative max all of them, and sees the transaction's own
// writes.
func testScanFirst(t *testing.T, h *harness) {
	h.update(func(tx store.Tx) error {
		for _, k := range []string{"p/3", "p/1", "p/4", "p/2", "q/1"} {
			if err := tx.Put([]byte(k), []byte("v"+k)); err != nil {
				return err
			}
		}
		return nil
	})
	first := func(tx store.ReadTx, max int) []string {
		var got []string
		if err := tx.ScanFirst([]byte("p/"), max, func(k, v []byte) error {
			got = append(got, string(k)+"="+string(v))
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		return got
	}
	h.view(func(tx store.ReadTx) error {
		if got := first(tx, 2); !slices.Equal(got, []string{"p/1=vp/1", "p/2=vp/2"}) {
			t.Errorf("first 2: %v", got)
		}
		if got := first(tx, 0); len(got) != 0 {
			t.Errorf("first 0: %v", got)
		}
		if got := first(tx, -1); len(got) != 4 {
			t.Errorf("all: %v", got)
		}
		return nil
	})
	h.update(func(tx store.Tx) error {
		if err := tx.Put([]byte("p/0"), []byte("new")); err != nil {
			return err
		}
		if got := first(tx, 1); !slices.Equal(got, []string{"p/0=new"}) {
			t.Errorf("first 1 after a put in the same transaction: %v", got)
		}
		return nil
	})
}

// testBacklog: Backlog counts a stream's pending messages, those visible
// now, and when the oldest visible one became visible; acknowledged
// messages and other streams do not count.
func testBacklog(t *testing.T, h *harness) {
	ctx := context.Background()
	b, err := h.s.Backlog(ctx, "s")
	if err != nil || b.Ready != 0 || b.Pending != 0 || !b.OldestReady.IsZero() {
		t.Fatalf("empty stream: %+v %v", b, err)
	}
	t0 := h.clock.Now()
	h.update(func(tx store.Tx) error {
		for _, m := range []store.Message{
			{ID: id(1), Stream: "s", Payload: []byte("a")},
			{ID: id(2), Stream: "s", Payload: []byte("b")},
			{ID: id(3), Stream: "s", Payload: []byte("c"), NotBefore: t0.Add(time.Hour)},
			{ID: id(4), Stream: "s-other", Payload: []byte("d")},
		} {
			if err := tx.Enqueue(m); err != nil {
				return err
			}
		}
		return nil
	})
	h.clock.Advance(time.Minute)
	m, err := h.reserve("s", 10*time.Minute) // taken: pending, not ready
	if err != nil {
		t.Fatal(err)
	}
	b, err = h.s.Backlog(ctx, "s")
	if err != nil || b.Ready != 1 || b.Pending != 3 || !b.OldestReady.Equal(t0) || !b.Now.Equal(t0.Add(time.Minute)) {
		t.Fatalf("backlog %+v %v: want 1 ready since %s, 3 pending, now %s", b, err, t0, t0.Add(time.Minute))
	}
	h.update(func(tx store.Tx) error { return tx.Ack(m.Receipt) })
	b, err = h.s.Backlog(ctx, "s")
	if err != nil || b.Ready != 1 || b.Pending != 2 {
		t.Fatalf("backlog after an ack %+v %v: want 1 ready, 2 pending", b, err)
	}
}
