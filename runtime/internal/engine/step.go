package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fxamacker/cbor/v2"

	"github.com/flowgen-dev/flowgen/runtime/internal/protocol"
	"github.com/flowgen-dev/flowgen/runtime/ledger"
	"github.com/flowgen-dev/flowgen/runtime/runtype"
	"github.com/flowgen-dev/flowgen/runtime/store"
)

// result is an activation's write-once outcome (protocol.Result).
type result = protocol.Result

// errRetryLater ends processing of a message that was handed back to the
// stream for a later attempt.
var errRetryLater = errors.New("retry later")

// leaseHeldRetry is how soon a message is offered again after it raced
// another worker for its job's lease (Reserve normally skips such jobs).
const leaseHeldRetry = 100 * time.Millisecond

// errPoison marks a message that cannot even be read as a task; it is
// dead-lettered. (An activation that can never make progress fails as
// Exhausted instead, so that its job goes on by its error policy.)
var errPoison = errors.New("poison message")

// entry is what the entry commit established for one delivery.
type entry struct {
	// came is how the delivery reached its worker: claimed (Inline),
	// published reserved by its predecessor (Chained) or by its start
	// (TakenOn); the committer its steps commit counts under unless
	// folded or run ahead.
	came  Committer
	m     store.Message
	t     task
	job   runtype.JobID
	lease store.Lease
	guid  ledger.GUID
	// c is the flow definition the delivery's job runs on, which judge
	// looked up.
	c *compiled
	// entered is when the entry commit was made (for the history).
	entered time.Time
	// wake is when a sleep node's first delivery set its timer for.
	wake time.Time
	// exhausted says why the activation can never make progress (its
	// ledger is at its ceiling): it fails as Exhausted instead of running.
	exhausted string
	// deferred is set when another worker holds the job: the message was
	// handed back and there is nothing more to do. unserved says it was
	// for want of the job's flow definition.
	deferred, unserved bool
	// tookOver says the entry took the job's lease from another worker,
	// killed that its job was killed.
	tookOver, killed bool
	// status is the job's final status when this delivery finished it
	// (for the metrics, after the commit).
	status *runtype.JobStatus
	// span is the traceparent of the activation's attempt (tracing.go):
	// a subflow's child job is traced under it.
	span string
	// later is the hand-back of a retry the processor left for the
	// delivery's worker to commit: in a transaction of its own
	// (handBackLater), or in the one that reserved the message when the
	// node ran folded into it (folding is set then, and no lease is
	// renewed: see fold).
	later   *laterAttempt
	folding bool
	// steps is what the delivery's last steps commit did; stepped says a
	// folded delivery committed its steps with its batch (not only its
	// hand-back).
	steps   stepsOutcome
	stepped bool
	// result is the activation's result as seal encoded it for its steps
	// commit, and res the result that commit wrote or read; ending is what
	// step 3 reads when the store read it with the collation. Step 3 in
	// the same commit needs no read for them.
	result []byte
	res    *result
	ending *ending
	// timerFired is the history event of result when it is a timer's
	// firing, encoded with it; a result is its own event otherwise.
	timerFired *preparedEvent
	// foreseen is the job's end, encoded before the commit in case this
	// step closes the job (foresee.go).
	foreseen *foreseenEnd
	// keys are the ledger keys guidKey and actKey built.
	keys struct{ guid, act []byte }
	// heartbeat counts the node's heartbeats; renewed is the lease as the
	// last renewal left it.
	heartbeat atomic.Int64
	renewed   atomic.Pointer[store.Lease]
}

// guidKey and actKey are the keys of the delivery's GUID and activity
// ledgers, built once: a step commit reads and writes each several times,
// and an activation id with a slash in it (every fan-out element's) is
// hashed into its keys.
func (en *entry) guidKey() []byte {
	if en.keys.guid == nil {
		en.keys.guid = protocol.GuidKey(en.job, en.m.ID)
	}
	return en.keys.guid
}

func (en *entry) actKey() []byte {
	if en.keys.act == nil {
		en.keys.act = protocol.ActivityKey(en.job, en.t.Act)
	}
	return en.keys.act
}

// enter is the entry commit of a delivery: take the job lease, count the
// leg 2 entry on the activity ledger and seed the GUID ordinal once. When
// another worker holds the job, the message is handed back instead.
func (pw *protocolWriter) enter(tx store.Tx, m store.Message) (*entry, error) {
	ens, errs := pw.enterAll(tx, []store.Message{m})
	return ens[0], errs[0]
}

// enterAll enters every message of a batch, with one read for all of
// them. A message that cannot enter has its error at its index: errPoison
// for one to dead-letter, or an error of the transaction.
//
// The leg 2 entries are counted first and judged after, so one read
// answers everything the entries need. Counting takes each activity
// ledger's row, so that read sees what any other delivery of the same
// activation committed before; a delivery that does not enter (paused,
// leased elsewhere, at the ceiling) takes its count back in the same
// commit.
func (pw *protocolWriter) enterAll(tx store.Tx, ms []store.Message) ([]*entry, []error) {
	ens, errs := make([]*entry, len(ms)), make([]error, len(ms))
	for i, m := range ms {
		ens[i], errs[i] = decodeEntry(m)
	}
	return pw.enterEntries(tx, ens, errs)
}

// enterEntries is enterAll for entries already made: ens[i] is nil when
// errs[i] says why.
func (pw *protocolWriter) enterEntries(tx store.Tx, ens []*entry, errs []error) ([]*entry, []error) {
	var keys, counters [][]byte
	var at []int // at[j] is the message of the j-th pair of keys and counters
	for i, en := range ens {
		if errs[i] != nil {
			continue
		}
		if err := tx.Bump(en.actKey(), ledger.Leg2Entry, ledger.MaxValue); err != nil {
			ens[i] = nil
			return ens, fill(errs, err)
		}
		keys = append(keys, protocol.PausedKey(en.job), protocol.TombKey(en.job))
		counters = append(counters, en.actKey(), en.guidKey())
		at = append(at, i)
	}
	if len(at) == 0 {
		return ens, errs
	}
	values, ns, err := tx.ReadMany(keys, counters)
	if err != nil {
		return ens, fill(errs, err)
	}
	for j, i := range at {
		errs[i] = pw.judge(tx, ens[i], values[2*j] != nil, values[2*j+1] != nil, ns[2*j], ns[2*j+1])
		if errs[i] != nil && !errors.Is(errs[i], errPoison) {
			return ens, fill(errs, errs[i]) // the transaction failed
		}
	}
	return ens, errs
}

// fill sets every error of a batch to err, the transaction's failure.
func fill(errs []error, err error) []error {
	for i := range errs {
		errs[i] = err
	}
	return errs
}

// decodeEntry reads the task a message carries.
func decodeEntry(m store.Message) (*entry, error) {
	var t task
	if err := cbor.Unmarshal(m.Payload, &t); err != nil {
		return nil, fmt.Errorf("message %x: undecodable task: %v: %w", m.ID, err, errPoison)
	}
	return entryOf(publishedStep{m, t}), nil
}

// publishedStep is a message this worker published reserved to itself
// and the task it carries, which entering it then need not decode.
type publishedStep struct {
	m store.Message
	t task
}

// entryOf is decodeEntry for p, without decoding.
func entryOf(p publishedStep) *entry {
	en := &entry{m: p.m, t: p.t}
	copy(en.job[:], p.m.Job)
	return en
}

// judge decides an entry whose leg 2 entry was counted, from what the
// entry read: whether the job is paused or killed, the activity ledger
// with the count and the message's GUID ledger.
func (pw *protocolWriter) judge(tx store.Tx, en *entry, paused, killed bool, act, cur int64) error {
	if paused && !killed { // kill beats pause: a killed job winds down
		return en.handBack(tx, pausedRetry)
	}
	var err error
	if en.c, err = pw.flows.flow(en.t.Flow); err != nil {
		return pw.leaveUnserved(tx, en, err)
	}
	en.lease, en.tookOver, err = pw.lease(tx, en.m.Job)
	if errors.Is(err, store.ErrLeaseHeld) {
		return en.handBack(tx, leaseHeldRetry)
	}
	if err != nil {
		return err
	}
	en.killed = killed
	a := ledger.Activity(act)
	if _, err := (a - ledger.Activity(ledger.Leg2Entry)).Leg2EntryDelta(); err != nil {
		// At the ceiling the entry cannot be counted, and a message
		// delivered forever would leave its job running with no way
		// forward: the delivery goes on uncounted and fails the activation
		// (work), so the job ends by its error policy.
		if err := en.uncount(tx); err != nil {
			return err
		}
		a -= ledger.Activity(ledger.Leg2Entry)
		en.exhausted = fmt.Sprintf("activity ledger at its ceiling: %v", err)
	}
	if cur == 0 {
		seed, err := ledger.NewGUID(a.Leg2Entries())
		if err != nil {
			return err
		}
		if err := tx.Bump(en.guidKey(), int64(seed), ledger.MaxValue); err != nil {
			return err
		}
		cur = int64(seed)
	}
	en.guid = ledger.GUID(cur)
	en.entered = pw.now()
	if en.m.Attempt <= 1 {
		return nil // its outcome event says when it entered (Since)
	}
	return pw.record(tx, en.job, runtype.HistoryEvent{At: en.entered, Event: runtype.EventLaunched, Act: en.t.Act, Attempt: en.m.Attempt})
}

// uncount takes back the leg 2 entry enter counted for a delivery that
// does not enter; the two cancel out in one commit.
func (en *entry) uncount(tx store.Tx) error {
	return tx.Bump(en.actKey(), -ledger.Leg2Entry, ledger.MaxValue)
}

// handBack returns the message to the stream for a later delivery, after
// delay, without entering and without counting an attempt (an at-most-once
// node would take a second attempt for a failed one): the job is paused,
// or another worker holds it.
func (en *entry) handBack(tx store.Tx, delay time.Duration) error {
	en.deferred = true
	if err := en.uncount(tx); err != nil {
		return err
	}
	return ignoreStale(tx.Return(en.m.Receipt, delay))
}

// lease returns this worker's lease on job, renewing it only when more
// than half of it has run out: a write to the lease row on every entry
// would serialise all of a job's concurrent activations behind it.
func (pw *protocolWriter) lease(tx store.Tx, job []byte) (l store.Lease, takeover bool, err error) {
	cur, err := tx.Lease(job)
	if err == nil && cur.Owner == pw.opts.Owner && cur.Expires.After(pw.now().Add(pw.opts.LeaseTTL/2)) {
		return cur, false, nil
	}
	took := err == nil && cur.Owner != pw.opts.Owner // another worker's, run out or released
	l, err = tx.AcquireLease(job, pw.opts.Owner, pw.opts.LeaseTTL)
	if err == nil {
		pw.held.Store(string(job), l)
	}
	return l, took && err == nil, err
}

// Process runs an already reserved message through the step protocol,
// and only that message: the next steps it publishes stay on the stream.
// Step uses the same path with the reservation folded into the entry
// commit; duplicate-delivery tests call Process to deliver one message
// many times, in any order.
func (e *Engine) Process(ctx context.Context, m store.Message) error {
	var en *entry
	err := e.store.Update(ctx, func(tx store.Tx) error {
		var err error
		en, err = e.writes.enter(tx, m)
		return err
	})
	if err != nil {
		return fmt.Errorf("entry: %w", err)
	}
	return e.worker.proceed(ctx, en, limits{}, false)
}

// proceed takes en on from its committed entry (step) and, with chain
// set, then the job's next steps that each steps commit entered for this
// worker (see chain.go), up to chainRounds in a row. lim is woken by
// every commit that published work for the process.
func (w *worker) proceed(ctx context.Context, en *entry, lim limits, chain bool) error {
	for round := 1; ; round++ {
		next, ahead, err := w.step(ctx, en, chain && round < chainRounds, chainRounds-1-round)
		round += ahead
		if err == nil {
			lim.published(en)
		}
		if err != nil || next == nil {
			return err
		}
		if ctx.Err() != nil {
			return w.writes.giveBack(next)
		}
		if err := w.hook.crash(runtype.CrashReserved); err != nil {
			return err
		}
		en = next
	}
}

// giveBack hands a chained step back untried when its worker stops
// before taking it on, so that another worker takes it as soon as the
// job's lease allows, not when its reservation would have run out.
func (pw *protocolWriter) giveBack(en *entry) error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := pw.store.Update(ctx, func(tx store.Tx) error { return en.handBack(tx, 0) })
	if err != nil {
		return fmt.Errorf("%s: hand back at shutdown: %w", en.t.Act, err)
	}
	return nil
}

// step runs the steps after entry: step 1 (the work and its result),
// step 2 (children, semaphore delta and job-closed snapshot, via Collate),
// step 3 (job completion, exactly once, by the message that closed the
// job), and the ack. Steps 1 and 2 commit together when both are due; each
// commit carries the ledger digits of the steps it holds and is fenced by
// the job lease, so a stale worker cannot commit. With chain set, a steps
// commit that publishes one next step may publish it reserved and enter
// it too (chain.go); step returns that delivery to take on next. With
// chain set, it may also run up to ahead of the chained steps after it
// and commit them with its own (ahead.go), and it returns how many.
func (w *worker) step(ctx context.Context, en *entry, chain bool, maxAhead int) (*entry, int, error) {
	if en.deferred {
		return nil, 0, nil
	}
	if err := w.hook.crash(runtype.CrashEntered); err != nil {
		return nil, 0, err
	}
	c := en.c // judge found it, or handed the delivery back
	if superseded, err := w.writes.superseded(ctx, c, en); err != nil || superseded {
		if err != nil {
			return nil, 0, err
		}
		return nil, 0, w.writes.settleAlone(ctx, en, "ack a superseded delivery", runtype.CrashAcked)
	}
	var res *result
	if !en.guid.WorkDone() {
		r, worked, err := w.work(ctx, c, en)
		if err != nil || !worked {
			return nil, 0, err
		}
		res = &r
	}
	if !en.guid.ChildrenSpawned() {
		return w.commitWork(ctx, c, en, res, chain, maxAhead)
	}
	return nil, 0, w.writes.finishAlone(ctx, en)
}

// finishAlone is step 3 in a commit of its own, for a delivery whose
// steps 1 and 2 committed without it: a message that closed its job in a
// store written before step 3 joined their commit.
func (pw *protocolWriter) finishAlone(ctx context.Context, en *entry) error {
	err := pw.store.Update(ctx, func(tx store.Tx) error {
		if err := pw.finish(tx, en, false); err != nil {
			return err
		}
		return tx.Settle(en.m.Receipt)
	})
	if err != nil {
		return fmt.Errorf("%s: step 3: %w", en.t.Act, err)
	}
	if err := pw.hook.crash(runtype.CrashStep3); err != nil {
		return err
	}
	return pw.hook.crash(runtype.CrashAcked)
}

// laterAttempt is the hand-back an attempt that did not end its
// activation leaves for its worker to commit: the message back on the
// stream after delay, as a retry (another attempt, with what retry
// records) or as the same attempt (a sleep delivered before its time).
type laterAttempt struct {
	delay time.Duration
	retry *retryRecord
}

// retryRecord is what a retry records: the failed attempt's aspect log
// and its retrying event.
type retryRecord struct {
	log   []byte
	event runtype.HistoryEvent
}

// handBackLater commits, in a transaction of its own, the hand-back the
// processor left in en.later (none: the holder committed one already).
func (pw *protocolWriter) handBackLater(ctx context.Context, en *entry) error {
	if en.later == nil {
		return nil
	}
	if err := pw.store.Update(ctx, func(tx store.Tx) error { return pw.handBackIn(tx, en) }); err != nil {
		return fmt.Errorf("%s: hand back for a retry: %w", en.t.Act, err)
	}
	en.later = nil
	return nil
}

// handBackIn writes, in tx, the hand-back en's attempt left (en.later).
func (pw *protocolWriter) handBackIn(tx store.Tx, en *entry) error {
	l := en.later
	if l.retry == nil {
		return en.handBack(tx, l.delay)
	}
	if err := tx.Put(protocol.AttemptLogKey(en.job, en.t.Act, en.m.Attempt), l.retry.log); err != nil {
		return err
	}
	if err := record(tx, pw.now(), en.job, l.retry.event); err != nil {
		return err
	}
	return ignoreStale(tx.Nack(en.m.Receipt, l.delay))
}

// settleAlone acknowledges en's message in a commit of its own, then
// passes the crash point after it.
func (pw *protocolWriter) settleAlone(ctx context.Context, en *entry, what, point string) error {
	if err := pw.store.Update(ctx, func(tx store.Tx) error { return tx.Settle(en.m.Receipt) }); err != nil {
		return fmt.Errorf("%s: %s: %w", en.t.Act, what, err)
	}
	return pw.hook.crash(point)
}

// work runs en's activation (a killed job's activations, but for undo,
// are canceled without running) and reports whether it produced a result
// to commit; it did not when the delivery was handed back for a later
// retry or parked (a checkpoint, a sleep, a subflow's child), which
// work commits itself.
func (w *worker) work(ctx context.Context, c *compiled, en *entry) (result, bool, error) {
	r := result{ErrKind: runtype.Canceled, Err: "job was killed", Attempts: en.m.Attempt}
	if !en.killed || en.t.Kind == protocol.Undo { // undo runs even in a killed job
		var err error
		r, err = w.proc.work(ctx, c, en)
		switch {
		case errors.Is(err, errRetryLater):
			return r, false, w.writes.handBackLater(ctx, en)
		case errors.Is(err, errParked):
			return r, false, w.writes.park(ctx, en, "", nil)
		case errors.Is(err, errSleeping):
			return r, false, w.writes.park(ctx, en, "", func(tx store.Tx) error { return w.writes.setTimer(tx, en) })
		case errors.Is(err, errStartChild):
			return r, false, w.writes.park(ctx, en, "", func(tx store.Tx) error { return w.writes.startChild(tx, c, en) })
		case err != nil:
			return r, false, err
		}
		if why, ok := parksForAHuman(c, en.t, r); ok {
			return r, false, w.writes.park(ctx, en, why, nil)
		}
	}
	return r, true, w.hook.crash(runtype.CrashWorked)
}

// commitWork commits en's steps 1 and 2 with res (nil: step 1 committed
// before), and step 3 when they close the job, with the steps run ahead
// of their entries when chain allows up to maxAhead of them. It returns
// the next step's delivery when this commit reserved it, and how many
// steps ahead committed.
func (w *worker) commitWork(ctx context.Context, c *compiled, en *entry, res *result, chain bool, maxAhead int) (*entry, int, error) {
	if res != nil {
		if _, err := w.writes.seal(en, res); err != nil {
			return nil, 0, err
		}
	}
	var ahead []ranAhead
	if chain && maxAhead > 0 {
		var err error
		if ahead, err = w.runAhead(ctx, c, en, res, maxAhead); err != nil {
			return nil, 0, err
		}
	}
	if len(ahead) > 0 {
		w.foresee(ahead[len(ahead)-1])
	} else {
		w.foresee(en)
	}
	next, done, err := w.commitOnce(ctx, c, en, res, chain, ahead)
	if err != nil && len(ahead) > 0 && ctx.Err() == nil && !w.hook.hasCrashed() {
		// A step run ahead was refused (a write-once conflict, say):
		// commit this one alone, and the next goes on by itself.
		next, done, err = w.commitOnce(ctx, c, en, res, chain, nil)
	}
	if errors.Is(err, store.ErrConflict) && chain {
		// The next step's message may exist already (EnqueueReserved
		// refuses it): commit as if chaining did not exist, so that it
		// can never hold a job up.
		next, done, err = w.commitOnce(ctx, c, en, res, false, nil)
	}
	if err != nil {
		return nil, 0, fmt.Errorf("%s: steps 1-2: %w", en.t.Act, err)
	}
	if err := w.stepsCommitted(en, en.came); err != nil {
		return nil, 0, err
	}
	for _, d := range done {
		if err := w.stepsCommitted(d, RanAhead); err != nil {
			return nil, 0, err
		}
	}
	return next, len(done), nil
}

// commitOnce is one try of commitWork's transaction: en's steps, what
// they gather, the next step entered when en chained it, and the steps
// run ahead.
func (w *worker) commitOnce(ctx context.Context, c *compiled, en *entry, res *result, chain bool, ahead []ranAhead) (next *entry, done []*entry, err error) {
	err = w.store.Update(ctx, func(tx store.Tx) (err error) {
		next, done = nil, nil // fn may run again
		en.steps, err = w.writes.commitResult(tx, c, en, res, chain)
		if err == nil && en.steps.gather != nil {
			err = w.writes.gatherAll(tx, []*gather{en.steps.gather})
		}
		if err == nil && en.steps.next != nil {
			next, err = w.enterNext(tx, *en.steps.next)
		}
		if err == nil && chain && len(ahead) > 0 {
			done, next, err = w.commitAhead(tx, c, next, ahead)
		}
		return err
	})
	return next, done, err
}

// stepsOutcome is what a delivery's steps commit did, which its worker
// goes on from.
type stepsOutcome struct {
	// closed says the commit closed the job (step 3 with it).
	closed bool
	// published says it published next steps on the work stream.
	published bool
	// next is the one next step it published reserved to this worker,
	// when its committer chains (see chain.go).
	next *publishedStep
	// gather is the fan-out shard the delivery completed, which its
	// transaction counts last (gatherAll).
	gather *gather
}

// commitResult is the steps commit, fenced: steps 1 and 2, the ack and,
// when this message closed the job, step 3. With chain set, a single
// next step that may chain is published reserved to this worker.
func (pw *protocolWriter) commitResult(tx store.Tx, c *compiled, en *entry, res *result, chain bool) (stepsOutcome, error) {
	if err := tx.Fence(en.lease); err != nil {
		return stepsOutcome{}, err
	}
	// The ack commits with the steps or not at all; queued first, it
	// travels with them (see store.Tx).
	if err := tx.Settle(en.m.Receipt); err != nil {
		return stepsOutcome{}, err
	}
	out, err := pw.commitSteps(tx, c, en, res, chain)
	if err != nil || !out.closed {
		return out, err
	}
	// The message that takes the semaphore to zero finishes the job in the
	// same commit: step 3 needs none of its own.
	return out, pw.finish(tx, en, true)
}

// stepsCommitted counts what en's committed steps commit recorded, and
// the committer how that committed them, and passes its crash points.
func (w *worker) stepsCommitted(en *entry, how Committer) error {
	w.committed[how].Add(1)
	w.metrics.committed(en, w.writes.now())
	if err := w.hook.crash(runtype.CrashStep2); err != nil {
		return err
	}
	if en.steps.closed {
		if err := w.hook.crash(runtype.CrashStep3); err != nil {
			return err
		}
	}
	return w.hook.crash(runtype.CrashAcked)
}

// commitSteps writes step 1 (when res is not nil) and step 2 in the
// current transaction (see commitResult for chain).
func (pw *protocolWriter) commitSteps(tx store.Tx, c *compiled, en *entry, res *result, chain bool) (out stepsOutcome, err error) {
	job, t := en.job, en.t
	var steps []int // the digits this commit marks, in one increment
	if res != nil {
		if err := pw.writeResult(tx, c, en, res); err != nil {
			return out, err
		}
		steps = append(steps, 1)
	} else {
		raw, err := tx.Get(protocol.ResultKey(job, t.Act))
		if err != nil {
			return out, err
		}
		res = new(result)
		if err := json.Unmarshal(raw, res); err != nil {
			return out, err
		}
		en.res = res
	}
	children, g, err := pw.routeIn(tx, c, en, *res)
	if err != nil {
		return out, err
	}
	out.gather = g
	budgetOf(t).stamp(children)
	for i := range children {
		children[i].Started = t.Started
	}
	if err := spend(tx, job, budgetOf(t), children); err != nil {
		return out, err
	}
	if out.published, out.next, err = pw.publishChildren(tx, en, children, chain); err != nil {
		return out, err
	}
	// The step digits go before the collation so the collation's answer
	// carries them; they add to the same ledger in one commit, in either
	// order.
	if err := markStep(tx, en, en.guid, append(steps, 2)...); err != nil {
		return out, err
	}
	out.closed, err = collate(tx, en, semaphoreDelta(t, children))
	return out, err
}

// writeResult is step 1: en's result (sealed before the transaction),
// with what it records beside it (a fired timer's event, the job's
// failure, the compensable list, the dedupe record and the cache entry).
func (pw *protocolWriter) writeResult(tx store.Tx, c *compiled, en *entry, res *result) error {
	job, t := en.job, en.t
	raw, err := pw.seal(en, res)
	if err != nil {
		return err
	}
	if err := tx.PutOnce(protocol.ResultKey(job, t.Act), raw); err != nil {
		return err
	}
	if en.timerFired != nil {
		if err := en.timerFired.put(tx); err != nil {
			return err
		}
	}
	if res.Failed() && t.Kind != protocol.Body { // a forEach join judges its elements
		msg := fmt.Sprintf("%s: %s: %s", t.Act, res.ErrKind, res.Err)
		if err := tx.Put(protocol.FailKey(job, t.Act), []byte(msg)); err != nil {
			return err
		}
	}
	if err := pw.recordCompensable(tx, c, en, res); err != nil {
		return err
	}
	if err := pw.recordDedupe(tx, c, en, res); err != nil {
		return err
	}
	return pw.recordCache(tx, c, en, res)
}

// publishChildren is step 2's publishing: with chain set, the one child
// that may chain, reserved for this worker (next), else every child on
// the work stream (published); an activation with no successor marked
// terminal.
func (pw *protocolWriter) publishChildren(tx store.Tx, en *entry, children []task, chain bool) (published bool, next *publishedStep, err error) {
	job, t := en.job, en.t
	if chain && len(children) == 1 && chains(en.t, children[0]) {
		m, err := pw.publishReserved(tx, job, children[0])
		if err != nil {
			return false, nil, err
		}
		next = &publishedStep{m, children[0]}
	} else {
		for _, child := range children {
			if err := pw.publish(tx, job, child); err != nil {
				return false, nil, err
			}
		}
		published = len(children) > 0
	}
	if len(children) == 0 && t.Kind != protocol.Body && t.Kind != protocol.Undo {
		return published, next, tx.Put(protocol.TermKey(job, t.Act), []byte(t.Node))
	}
	return published, next, nil
}

// collate moves en's job's semaphore by delta and reports whether that
// closed the job.
func collate(tx store.Tx, en *entry, delta int64) (bool, error) {
	en.ending = nil
	closing := store.Collation{Semaphore: protocol.SemKey(en.job), Delta: delta, GUID: en.guidKey(), Weight: ledger.JobClosed}
	if delta < 0 {
		// This step may close the job: what step 3 reads comes with the
		// collation's answer.
		keys, counters := endingKeys(en)
		hit, values, ns, err := tx.CollateAndRead(closing, keys, counters)
		if hit {
			end := endingOf(values, ns)
			en.ending = &end
		}
		return hit, err
	}
	if delta == 0 {
		// One child takes this activation's obligation over: the
		// semaphore would not move, and it cannot be at zero while this
		// activation still holds its count. Nothing to collate, and no
		// row of the job to lock: the steps of a linear flow, and of many
		// activations of one job at once, do not queue on its semaphore.
		return false, nil
	}
	return tx.Collate(closing)
}

// seal stamps res as en's result, and its place in the job's history,
// and encodes it (with a timer's event), once: the steps commit writes
// what seal made before the transaction, so that on bbolt, whose commits
// run one at a time, no encoding runs inside one.
func (pw *protocolWriter) seal(en *entry, res *result) ([]byte, error) {
	if en.result != nil {
		return en.result, nil
	}
	res.Act, res.Since = en.t.Act, en.entered.UTC()
	if res.Finished.IsZero() {
		res.Finished = pw.now().UTC()
	}
	var fired *preparedEvent
	if !res.Failed() && en.t.Resume == timerResume {
		ev, err := prepareEvent(res.Finished, en.job, timerEvent(res, en.t.Wake))
		if err != nil {
			return nil, err
		}
		fired = &ev
	} else {
		res.Recorded = nextPlace(res.Finished)
	}
	raw, err := json.Marshal(res)
	if err != nil {
		return nil, err
	}
	en.result, en.res, en.timerFired = raw, res, fired
	return raw, nil
}

// semaphoreDelta is what an activation's steps commit adds to the job
// semaphore: every child it publishes opens a count and its own count
// closes. Grouped forEach bodies are the exception: between them they hold
// the one count of their group, which the forEach keeps open when it fans
// out and the body that publishes the join hands to it. A fan-out thus
// moves the semaphore only if the forEach publishes other children too,
// and its bodies never do.
func semaphoreDelta(t task, children []task) int64 {
	if t.Grouped() {
		return 0 // its child, if any, is the next body or the join
	}
	counted := 0
	for _, c := range children {
		if !c.Grouped() {
			counted++
		}
	}
	if counted < len(children) {
		counted++ // the group's count
	}
	return ledger.SemaphoreDelta(counted)
}

// superseded reports a delivery whose activation another message already
// completed. Only a parking node (checkpoint, subflow, sleep) has two messages
// for one activation: the one that parked and the one that resumed it.
// Whichever commits the result first completes the activation and takes
// its obligation off the semaphore; a later delivery of the other, one
// that has done no step of its own, is a duplicate to acknowledge.
func (pw *protocolWriter) superseded(ctx context.Context, c *compiled, en *entry) (bool, error) {
	n := c.byAlias[en.t.Node]
	if en.guid.WorkDone() || n == nil || (n.Checkpoint == nil && n.Subflow == nil && n.Sleep == nil) || en.t.Kind == protocol.Undo {
		return false, nil
	}
	done := false
	err := pw.store.View(ctx, func(tx store.ReadTx) error {
		_, err := tx.Get(protocol.ResultKey(en.job, en.t.Act))
		done = err == nil
		if errors.Is(err, store.ErrNotFound) {
			return nil
		}
		return err
	})
	if err != nil {
		return false, fmt.Errorf("%s: %w", en.t.Act, err)
	}
	return done, nil
}

// markStep adds the digits of steps (1, 2 or 3) to the message's GUID
// ledger, whose value was seen before the steps ran, in one increment. The
// guard refuses a step that is already marked: the protocol never commits
// one twice (a redelivered message reads the digit and skips the step), so
// a refusal is a bug and aborts the commit rather than corrupt the ledger.
func markStep(tx store.Tx, en *entry, seen ledger.GUID, steps ...int) error {
	var sum int64
	for _, step := range steps {
		d, err := seen.StepDelta(step)
		if err != nil {
			return fmt.Errorf("%s: step %d: %w", en.t.Act, step, err)
		}
		sum += d
	}
	return tx.Bump(en.guidKey(), sum, ledger.MaxValue)
}

// ending is what step 3 reads of the job before it writes, in one read.
type ending struct {
	guid ledger.GUID     // the message's ledger as the steps left it
	act  ledger.Activity // the activation's ledger
	// meta is the job's record (nil when not read: see endingKeys);
	// compensating and killed say whether the compensation chain was
	// started and the job tombstoned.
	meta                 []byte
	compensating, killed bool
}

// endingKeys are what step 3 reads: the job's compensation marker and
// tombstone, the message's GUID ledger and the activation's ledger, and,
// unless en foresaw the job's end, the job's meta.
func endingKeys(en *entry) (keys, counters [][]byte) {
	keys = [][]byte{protocol.CompensationKey(en.job), protocol.TombKey(en.job)}
	if en.foreseen == nil {
		keys = append(keys, protocol.MetaKey(en.job))
	}
	return keys, [][]byte{en.guidKey(), en.actKey()}
}

// endingOf is the ending that values and counters, read for endingKeys,
// describe.
func endingOf(values [][]byte, counters []int64) ending {
	end := ending{guid: ledger.GUID(counters[0]), act: ledger.Activity(counters[1]),
		compensating: values[0] != nil, killed: values[1] != nil}
	if len(values) > 2 {
		end.meta = values[2]
	}
	return end
}

// finish runs step 3 in tx when this message closed its job and the job
// is not completed yet; fenced says the transaction has already checked
// the lease.
func (pw *protocolWriter) finish(tx store.Tx, en *entry, fenced bool) error {
	var end ending
	if en.ending != nil {
		end = *en.ending // read with the collation that closed the job
	} else {
		keys, counters := endingKeys(en)
		values, ns, err := tx.ReadMany(keys, counters)
		if err != nil {
			return err
		}
		end = endingOf(values, ns)
	}
	if !end.guid.NeedsCompletion() {
		return nil
	}
	if !fenced {
		if err := tx.Fence(en.lease); err != nil {
			return err
		}
	}
	return pw.completeStep(tx, en, end)
}

// completeStep is step 3: the job's final status, the GUID marker and the
// activity's finalize digit, in the current transaction.
func (pw *protocolWriter) completeStep(tx store.Tx, en *entry, end ending) error {
	out, err := readOutcome(tx, en.job)
	if err != nil {
		return err
	}
	started := false
	if !end.compensating { // once the chain has run, this is the real end
		if started, err = pw.startCompensation(tx, en, len(out.errors) > 0); err != nil {
			return err
		}
	}
	if !started {
		var st runtype.JobStatus
		if f := en.foreseen; f.fits(out, end) {
			st, err = f.end.st, f.end.write(tx, pw, en.job)
		} else {
			known := map[string]*result{}
			if en.res != nil {
				known[string(protocol.ResultKey(en.job, en.t.Act))] = en.res
			}
			st, err = pw.complete(tx, en.job, pw.retention(en.c), end, out, known)
		}
		if err != nil {
			return err
		}
		en.status = &st
		// A finished job's lease has nothing left to hand over at
		// shutdown; it runs out by itself. (Should this commit fail, the
		// job's next delivery takes the lease again.)
		pw.held.Delete(string(en.job[:]))
	}
	if err := markStep(tx, en, end.guid, 3); err != nil {
		return err
	}
	if d, err := end.act.FinalizeDelta(); err == nil {
		return tx.Bump(en.actKey(), d, ledger.MaxValue)
	}
	return nil
}

// outcome is what step 3 reads of how the job's activations ended, in one
// read: the failures, the terminal activations (node and result key) and
// the compensated ones.
type outcome struct {
	errors      []string
	nodes       []string
	results     [][]byte
	compensated []string
}

func readOutcome(tx store.ReadTx, job runtype.JobID) (outcome, error) {
	var out outcome
	termPrefix := protocol.JobPrefix(job, "term")
	err := tx.ScanMany([][]byte{protocol.JobPrefix(job, "fail"), termPrefix, protocol.JobPrefix(job, "comp")}, func(i int, k, v []byte) error {
		switch i {
		case 0:
			out.errors = append(out.errors, string(v))
		case 1:
			out.nodes = append(out.nodes, string(v))
			out.results = append(out.results, protocol.ResultKey(job, strings.TrimPrefix(string(k), string(termPrefix))))
		case 2:
			out.compensated = append(out.compensated, string(v))
		}
		return nil
	})
	return out, err
}

// ignoreStale treats a stale receipt as done: another delivery of the same
// message acknowledged it, or will.
func ignoreStale(err error) error {
	if errors.Is(err, store.ErrStaleReceipt) {
		return nil
	}
	return err
}

// readResults returns the results under keys: those in known as they
// are, the others read in one read and decoded. A key with no result
// fails with ErrNotFound.
func readResults(tx store.ReadTx, keys [][]byte, known map[string]*result) ([]*result, error) {
	rs := make([]*result, len(keys))
	var missing [][]byte
	var at []int
	for i, k := range keys {
		if r, ok := known[string(k)]; ok {
			rs[i] = r
			continue
		}
		missing, at = append(missing, k), append(at, i)
	}
	if len(missing) == 0 {
		return rs, nil
	}
	read, _, err := tx.ReadMany(missing, nil)
	if err != nil {
		return nil, err
	}
	for j, i := range at {
		if read[j] == nil {
			return nil, fmt.Errorf("terminal result %q: %w", missing[j], store.ErrNotFound)
		}
		rs[i] = new(result)
		if err := json.Unmarshal(read[j], rs[i]); err != nil {
			return nil, err
		}
	}
	return rs, nil
}

// crashHook passes the crash points of the step protocol to
// Options.CrashPoint, the crash tests' hook (none: it passes them all).
type crashHook struct {
	point func(point string) error
	// mu serialises calls of the hook, which deliveries of one batch
	// reach concurrently; crashed is the hook's error once it crashed
	// the engine.
	mu      sync.Mutex
	crashed error
}

// hasCrashed reports whether the crash hook crashed the engine.
func (h *crashHook) hasCrashed() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.crashed != nil
}

// crash passes a crash point. Once the hook has crashed the engine, every
// later point fails with the same error, as in a process that died: a
// backend may run a failed Update's function again (bbolt's group commit
// runs it alone, PostgreSQL reruns a deadlock's victim), and a crashed
// engine must not carry on there.
func (h *crashHook) crash(point string) error {
	if h.point == nil {
		return nil
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.crashed == nil {
		h.crashed = h.point(point)
	}
	return h.crashed
}

// complete writes the job's final status from its activations' results,
// with the expiry entry that deletes the job after retention; known holds
// results the caller has in hand, by key (the closing activation's own,
// usually the only terminal one), which it need not read.
func (pw *protocolWriter) complete(tx store.Tx, job runtype.JobID, retention time.Duration, end ending, out outcome, known map[string]*result) (runtype.JobStatus, error) {
	if end.meta == nil {
		raw, err := tx.Get(protocol.MetaKey(job))
		if err != nil {
			return runtype.JobStatus{}, fmt.Errorf("job %s: record: %w", job, err)
		}
		end.meta = raw
	}
	meta, err := decodeClosingMeta(job, end.meta)
	if err != nil {
		return runtype.JobStatus{}, err
	}
	rs, err := readResults(tx, out.results, known)
	if err != nil {
		return runtype.JobStatus{}, fmt.Errorf("job %s: %w", job, err)
	}
	st := jobStatus(out, meta.Started, pw.now().UTC(), rs, end.killed)
	if len(st.Compensated) > 0 {
		if err := haltedAt(tx, job, &st); err != nil {
			return st, err
		}
	}
	enc, err := encodeEnd(job, st, retention, meta.Parent)
	if err != nil {
		return st, err
	}
	return st, enc.write(tx, pw, job)
}
