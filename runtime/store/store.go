// Package store defines the durable primitives the runtime's step protocol
// is built on, independent of any backend. Each backend lives in its own
// package below this one and passes the shared conformance suite in
// storetest.
//
// The rule every backend guarantees: everything done inside one Update
// commits atomically or not at all. The step protocol relies on it to commit
// each step's writes with the ledger digit that proves them.
package store

import (
	"bytes"
	"context"
	"errors"
	"slices"
	"time"
)

// Errors callers branch on. Backends wrap them with context.
var (
	// ErrNotFound: no value under the key.
	ErrNotFound = errors.New("store: not found")
	// ErrConflict: a write-once key already holds a different value.
	ErrConflict = errors.New("store: write-once value differs")
	// ErrOverflow: a counter would leave [0, max].
	ErrOverflow = errors.New("store: counter out of range")
	// ErrEmpty: no message is visible on the stream.
	ErrEmpty = errors.New("store: no visible message")
	// ErrStaleReceipt: the message was acknowledged, or reserved again by
	// another owner after this receipt's visibility timeout ran out.
	ErrStaleReceipt = errors.New("store: stale receipt")
	// ErrLeaseHeld: another owner holds a live lease on the job.
	ErrLeaseHeld = errors.New("store: lease held by another owner")
	// ErrFenced: the lease is no longer the job's current lease; the
	// holder must stop writing for the job.
	ErrFenced = errors.New("store: lease fenced")
	// ErrUnsupported: the backend lacks the capability the operation
	// needs (see Capabilities).
	ErrUnsupported = errors.New("store: not supported by this backend")
)

// Store is a transactional key-value store with counters, leases and
// durable message streams.
type Store interface {
	// Update runs fn in a read-write transaction and commits it when fn
	// returns nil; on error nothing fn did is visible. fn may run more than
	// once (backends may batch and retry), so it must not have effects
	// outside the transaction.
	Update(ctx context.Context, fn func(Tx) error) error
	// View runs fn in a read-only transaction over a consistent snapshot.
	View(ctx context.Context, fn func(ReadTx) error) error
	// PurgeAcked forgets up to max messages of stream that were
	// acknowledged before before, and returns how many it forgot. It works
	// in transactions of its own, short enough not to hold up other
	// writers; call it again for more. Pending and dead-lettered messages
	// are never forgotten. An Enqueue of a forgotten ID publishes it again,
	// so only messages that no step can publish again may go: the caller
	// picks before accordingly.
	PurgeAcked(ctx context.Context, stream string, before time.Time, max int) (int, error)
	// Backlog reports the stream's queue as one consistent read.
	Backlog(ctx context.Context, stream string) (Backlog, error)
	// Notify returns a channel that receives a value soon after each
	// commit that published on stream a message any worker may take now
	// (several commits may share one value), so an idle worker's latency
	// is not bounded by a poll interval; a backend that keeps a job's new
	// messages for its lease holder, busy with the job, may stay silent on
	// those. The channel closes when ctx ends.
	Notify(ctx context.Context, stream string) (<-chan struct{}, error)
	// Ready reports whether stream may have a message visible now, for an
	// idle worker that would rather look than open a write transaction to
	// reserve. false means a Reserve would find nothing; true is a hint
	// only (the message's job may be leased by another owner, or another
	// worker reserve it first). A backend whose reservation costs no more
	// than a look (see Capabilities.ExpensiveCommits) may always answer
	// true.
	Ready(ctx context.Context, stream string) (bool, error)
	// Reclaim makes the space of deleted rows reusable without locking
	// out readers or writers, for a sweeper that deleted; a table another
	// maintenance pass holds is skipped. A backend that reuses freed
	// space at once (bbolt) does nothing.
	Reclaim(ctx context.Context) error
	// Capabilities says what the backend does beyond what every backend
	// does; it never changes over the store's life.
	Capabilities() Capabilities
	// Close releases the store; a closed store's methods return errors.
	Close() error
}

// Capabilities are what a backend does that not every backend does, and
// what its operations cost. The engine reads them once, when it is made,
// and picks its ways of working by them; nothing else asks a store what
// it is.
type Capabilities struct {
	// LocksRows: write transactions lock the rows they touch, not the
	// whole store (PostgreSQL; not bbolt, whose one writer would hold up
	// every other), so many may be open at once and a transaction may
	// stay open while a short computation runs without delaying the
	// others' commits.
	LocksRows bool
	// Savepoints: Tx.Atomically undoes a unit that fails and the
	// transaction goes on (PostgreSQL). Without it Atomically fails with
	// ErrUnsupported and does not run its unit.
	Savepoints bool
	// ExpensiveCommits: a write transaction costs much more than a read
	// (bbolt: one writer at a time and a sync to disk each), so an idle
	// worker asks Ready before it opens one to reserve.
	ExpensiveCommits bool
}

// Collation is the step 2 compound write: add Delta to the Semaphore
// counter and, when the result equals Threshold, add Weight to the GUID
// counter.
type Collation struct {
	// Semaphore is the counter Delta moves.
	Semaphore []byte
	// Delta is added to Semaphore.
	Delta int64
	// Threshold is the value of Semaphore that hits.
	Threshold int64
	// GUID is the counter Weight is added to on a hit.
	GUID []byte
	// Weight is added to GUID on a hit.
	Weight int64
}

// ReadTx reads values, counters, leases and messages.
type ReadTx interface {
	// Get returns the value under key or ErrNotFound. The slice is valid
	// only until the transaction ends.
	Get(key []byte) ([]byte, error)
	// ReadMany returns the values under keys and the counters under
	// counters, each in the order asked, in one read (one round trip on a
	// networked store): a nil value for a key with none, a non-nil one
	// (possibly empty) for a key with one, 0 for an absent counter. The
	// slices are valid only until the transaction ends.
	ReadMany(keys, counters [][]byte) ([][]byte, []int64, error)
	// Scan calls fn for every value whose key starts with prefix, in
	// bytewise key order, stopping at the first error fn returns. fn may
	// read and write through the same transaction; writes under the prefix
	// do not change what the scan visits.
	Scan(prefix []byte, fn func(key, value []byte) error) error
	// ScanFirst is Scan of only the first max values under prefix, which
	// it reads without reading the rest.
	ScanFirst(prefix []byte, max int, fn func(key, value []byte) error) error
	// ScanMany is Scan over several prefixes in one read: fn gets each
	// value with the index of its prefix, prefix by prefix in the order
	// given, in key order within each (a key under two prefixes comes
	// twice).
	ScanMany(prefixes [][]byte, fn func(prefix int, key, value []byte) error) error
	// Counter returns the counter under key; absent counters are 0.
	// Counters are a keyspace of their own, separate from values.
	Counter(key []byte) (int64, error)
	// ScanCounters is Scan for counters.
	ScanCounters(prefix []byte, fn func(key []byte, value int64) error) error
	// Lease returns the job's current lease, or ErrNotFound.
	Lease(job []byte) (Lease, error)
	// Pending returns every message of stream not yet acknowledged or
	// dead-lettered, ordered by when they become visible. Each carries
	// the receipt of its current state: Ack with it settles the message
	// unless something (a reservation, another Ack) changed it since,
	// which is how an operator settles a dead letter, a message no
	// worker reserves.
	Pending(stream string) ([]Message, error)
}

// Tx is a read-write transaction.
//
// Put, PutOnce, Delete, Bump, Enqueue, EnqueueReserved, Settle and Fence
// need no answer, and a backend may hold them back and send them with the
// transaction's next operation that needs one, or with the commit (the
// PostgreSQL store does, to spend one round trip on many writes). Their errors are then returned
// by that later operation, or by Update, and the transaction fails: a
// caller that would go on after such an error (ErrConflict from PutOnce,
// say) reads first instead. Reads always see the transaction's own writes.
type Tx interface {
	ReadTx
	// Put stores value under key, replacing any value.
	Put(key, value []byte) error
	// PutOnce stores value under key if the key is empty. Writing the same
	// value again succeeds (replays are harmless); a different value fails
	// with ErrConflict.
	PutOnce(key, value []byte) error
	// Delete removes the value under key; deleting nothing succeeds.
	Delete(key []byte) error
	// DeletePrefix removes up to max of the values and counters whose keys
	// start with prefix, values first and each in key order, and returns
	// how many it removed: fewer than max means none is left. It deletes
	// without reading them to the caller, so a large prefix goes in
	// bounded transactions, one call each.
	DeletePrefix(prefix []byte, max int) (int, error)
	// Add adds delta to the counter under key and returns the new value,
	// failing with ErrOverflow when it would leave [0, max].
	Add(key []byte, delta, max int64) (int64, error)
	// Bump is Add for a caller that needs no new value: the backend may
	// send it later (see Tx), and ErrOverflow then fails the transaction.
	Bump(key []byte, delta, max int64) error
	// Collate makes c's writes and reports whether its threshold was
	// hit. Both changes commit with the rest of the transaction.
	Collate(c Collation) (bool, error)
	// CollateAndRead is Collate and, when the threshold was hit, ReadMany
	// of keys and counters, whose answer then sees what the collation
	// did; on a miss values and ns are nil. It is one round trip on a
	// networked store, so a step that may close its job reads what
	// closing needs with the collation's answer.
	CollateAndRead(c Collation, keys, counters [][]byte) (hit bool, values [][]byte, ns []int64, err error)
	// Atomically runs fn inside the transaction as one unit, where the
	// backend has Capabilities.Savepoints (ErrUnsupported otherwise, fn
	// not run). When fn returns nil, its writes have reached the backend
	// and been accepted: a held-back write's error (see Tx) is returned
	// here, and fn's work is undone. When fn fails, everything it did is
	// undone, its error is returned and the transaction goes on as it was
	// before fn. fn must not call Atomically. An error the transaction
	// itself cannot survive (a lost connection) fails every later
	// operation and the Update. A batch of unrelated units of work shares
	// one transaction and one commit this way, and a unit that fails
	// takes nothing of the others with it.
	Atomically(fn func(Tx) error) error
	// Reserve makes up to c.Max of the oldest visible messages of
	// c.Stream invisible for c.Visibility, reserved to c.Owner, and
	// returns them, each with a receipt,
	// ordered by job and then ID (so that transactions reserving several
	// take their jobs' rows in one order); ErrEmpty when none is visible.
	// Messages of a job whose lease another owner holds are skipped, so a
	// job's work stays with its current worker. Each reservation
	// increments the message's attempt count. Reserving in the same
	// transaction as the first writes for the messages saves a commit per
	// message.
	Reserve(c Claim) ([]Message, error)
	// Enqueue adds m to its stream, visible from m.NotBefore (or now).
	// Enqueueing an ID that is already pending or was acknowledged is a
	// no-op, so publishing is idempotent per message ID.
	Enqueue(m Message) error
	// EnqueueReserved is Enqueue and a reservation of m by owner in one
	// write: it returns m as Reserve would (attempt 1, a receipt, invisible
	// for visibility), so a worker that publishes a job's next step can
	// take it on itself, in this transaction or after its commit, without
	// reserving it. m.NotBefore is ignored. An ID that is already pending
	// or was acknowledged fails the transaction with ErrConflict (the
	// backend may report it later, see Tx): a receipt for it could name
	// another delivery's reservation.
	EnqueueReserved(m Message, owner string, visibility time.Duration) (Message, error)
	// Ack removes the reserved message for good. Ack, Nack and DeadLetter
	// fail with ErrStaleReceipt, changing nothing and leaving the rest of the
	// transaction intact, when r is not the message's latest reservation.
	Ack(r Receipt) error
	// Settle is Ack for a caller to whom a stale receipt is no news
	// (another delivery acknowledged the message, or will): it then does
	// nothing. It needs no answer, so the backend may send it later (see
	// Tx).
	Settle(r Receipt) error
	// Nack makes the reserved message visible again after delay.
	Nack(r Receipt, delay time.Duration) error
	// Return is Nack for a message its worker did not try at all (its job
	// is paused, or another worker holds it): the reservation's attempt
	// is taken back, so the next delivery counts as the attempt this one
	// would have been.
	Return(r Receipt, delay time.Duration) error
	// Extend keeps the reserved message invisible until visibility from
	// now, for a worker still working it: its receipt stays valid and its
	// attempt count is unchanged. ErrStaleReceipt when r is not the
	// message's latest reservation.
	Extend(r Receipt, visibility time.Duration) error
	// DeadLetter moves the reserved message to the stream's dead-letter
	// stream (stream + DeadLetterSuffix) with the reason recorded.
	DeadLetter(r Receipt, reason string) error
	// AcquireLease gives owner the job's lease for ttl. A new holder (or a
	// holder whose lease expired) gets a higher fencing token than any
	// before; the current holder renewing keeps its token. ErrLeaseHeld when
	// another owner's lease is live.
	AcquireLease(job []byte, owner string, ttl time.Duration) (Lease, error)
	// Fence fails with ErrFenced unless l is the job's current, unexpired
	// lease. Calling it first in an Update makes the whole commit fenced.
	Fence(l Lease) error
	// ReleaseLease ends l early if it is still current.
	ReleaseLease(l Lease) error
	// DeleteLease forgets the job's lease record, current or not, for a
	// job that no one will work again (its records are being deleted): a
	// holder's next Fence fails with ErrFenced, and a later AcquireLease
	// would count its tokens from the start again.
	DeleteLease(job []byte) error
}

// Backlog is a stream's queue at one moment.
type Backlog struct {
	// Now is the store's clock when it was read.
	Now time.Time
	// Ready counts the messages visible at Now; OldestReady is when the
	// oldest of them became visible (zero when none is).
	Ready       int
	OldestReady time.Time
	// Pending counts every message not acknowledged, visible or not.
	Pending int
}

// DeadLetterSuffix names a stream's dead-letter stream.
const DeadLetterSuffix = ".dead"

// Message is one durable message of a stream.
type Message struct {
	// ID is unique per message; publishing the same ID twice is a no-op.
	ID     [16]byte
	Stream string
	// Job is the root id of the job the message belongs to.
	Job     []byte
	Payload []byte
	// NotBefore delays visibility; zero means now.
	NotBefore time.Time
	// Attempt counts reservations, 1 on the first delivery.
	Attempt int
	// Reason is set on dead-lettered messages.
	Reason string
	// Receipt identifies this reservation; zero on messages not reserved.
	Receipt Receipt
}

// SortByJob orders reserved messages as Reserve returns them: by job, then
// by ID.
func SortByJob(ms []Message) {
	slices.SortFunc(ms, func(a, b Message) int {
		if c := bytes.Compare(a.Job, b.Job); c != 0 {
			return c
		}
		return bytes.Compare(a.ID[:], b.ID[:])
	})
}

// Receipt proves a reservation; only the latest reservation's receipt can
// acknowledge, nack or dead-letter the message.
type Receipt struct {
	ID     [16]byte
	Stream string
	Token  uint64
}

// Lease is a job's single-writer lease with its fencing token.
type Lease struct {
	Job     []byte
	Owner   string
	Token   uint64
	Expires time.Time
}

// Claim is what Tx.Reserve takes: up to Max visible messages of Stream,
// reserved to Owner for Visibility.
type Claim struct {
	Stream     string
	Owner      string
	Visibility time.Duration
	Max        int
}
