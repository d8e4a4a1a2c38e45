package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/flowgen-dev/flowgen/runtime/internal/maintenance"
	"github.com/flowgen-dev/flowgen/runtime/internal/protocol"
	"github.com/flowgen-dev/flowgen/runtime/observe"
	"github.com/flowgen-dev/flowgen/runtime/runtype"
	"github.com/flowgen-dev/flowgen/runtime/store"
)

// Options configure an Engine; the zero value is usable. They are
// runtime.Options without the capabilities (package runtime grants those
// in its Task adapter); the fields mean what runtime.Options says.
type Options struct {
	Owner      string
	Visibility time.Duration
	LeaseTTL   time.Duration
	Timeout    time.Duration
	CrashPoint func(point string) error
	Batch      int
	Logger     *slog.Logger
	Now        func() time.Time
	After      func(time.Duration) <-chan time.Time
	Retention  time.Duration
	SweepEvery time.Duration
	SweepBatch int
	Metrics    observe.Metrics
	Tracing    observe.Tracer
}

// Engine runs registered flows on a store. It is safe for concurrent use;
// several engines (processes) may share one store. Its methods are the
// runtime's API; the work is done by its parts: the protocol writer makes
// every durable write of the step protocol, the worker carries deliveries
// from reserved to committed by one of its committers, and the catalog
// holds the registered flow definitions.
type Engine struct {
	store store.Store
	opts  Options
	log   *slog.Logger

	flows  *catalog
	writes *protocolWriter
	worker *worker
	hook   *crashHook

	// schedules are the schedules this process starts jobs for.
	schedules *maintenance.Schedules
	sweeper   *maintenance.Sweeper
	metrics   metrics
	tracing   *tracing
}

// New returns an engine on s.
func New(s store.Store, opts Options) *Engine {
	if opts.Owner == "" {
		id, _ := runtype.NewJobID()
		opts.Owner = "worker-" + id.String()[:8]
	}
	if opts.Visibility == 0 {
		opts.Visibility = 30 * time.Second
	}
	if opts.LeaseTTL == 0 {
		opts.LeaseTTL = 30 * time.Second
	}
	if opts.Timeout == 0 {
		opts.Timeout = time.Minute
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	afterFunc := afterOn(opts.After)
	if opts.After == nil {
		opts.After = time.After
	}
	var caps store.Capabilities
	if s != nil { // an engine only to register flows with, in tests
		caps = s.Capabilities()
	}
	if opts.Batch <= 0 {
		opts.Batch = defaultBatch
		if !caps.LocksRows {
			opts.Batch = defaultBatchOneWriter
		}
	}
	if opts.Retention == 0 {
		opts.Retention = defaultRetention
	}
	if opts.SweepEvery == 0 {
		opts.SweepEvery = defaultSweepEvery
	}
	if opts.SweepBatch <= 0 {
		opts.SweepBatch = defaultSweepBatch
	}
	log := opts.Logger
	if log == nil {
		log = slog.Default()
	}
	e := &Engine{store: s, opts: opts, log: log.With("worker", opts.Owner), flows: newCatalog()}
	e.metrics = newMetrics(opts.Metrics)
	e.tracing = newTracing(opts.Tracing, s, opts.Owner)
	e.hook = &crashHook{point: opts.CrashPoint}
	e.writes = &protocolWriter{store: s, opts: &e.opts, log: e.log, flows: e.flows, hook: e.hook, metrics: e.metrics, tracing: e.tracing, afterFunc: afterFunc}
	proc := &processor{view: s, holds: e.writes, opts: &e.opts, log: e.log, metrics: e.metrics, tracing: e.tracing}
	e.worker = &worker{writes: e.writes, store: s, opts: &e.opts, log: e.log, caps: caps, proc: proc, metrics: e.metrics, tracing: e.tracing, hook: e.hook}
	e.sweeper = newSweeper(s, &e.opts, e.log, e.metrics, e.hook)
	e.schedules = &maintenance.Schedules{Store: s, Starter: scheduleStarter{e}, Now: opts.Now, Crash: e.hook.crash, Log: e.log, Metrics: e.metrics}
	return e
}

// Register makes a flow's definition runnable. Several versions of a flow
// may be registered side by side: a job runs on the definition it started
// on, and Start without a version picks the newest. Registering the same
// definition again replaces its build; registering other content under a
// version registered before is refused.
func (e *Engine) Register(f *Flow) error {
	c, err := compile(f)
	if err != nil {
		return err
	}
	return e.flows.register(c)
}

// jobMeta is stored at pid/<root>/meta.
type jobMeta struct {
	Flow string `json:"flow"`
	// Version and Hash name the definition the job runs on to the end.
	Version string `json:"version,omitempty"`
	Hash    string `json:"hash,omitempty"`
	// Key is the caller's job key the job was started under (StartOnce).
	Key     string          `json:"key,omitempty"`
	Input   json.RawMessage `json:"input"`
	Started time.Time       `json:"started"`
	// Parent is set on a subflow's job: the activation waiting for it.
	Parent *parentRef `json:"parent,omitempty"`
	Depth  int        `json:"depth,omitempty"`
	Budget jobBudget  `json:"budget,omitzero"`
	// Trace is the W3C traceparent of the span that started the job
	// (tracing.go); its activations' spans are its children.
	Trace string `json:"trace,omitempty"`
	// Recorded is the job's start's place in its history (protocol.HistoryPlace):
	// the record is the started event (startedEvent). Jobs started before
	// it existed have none, and their started event a value of its own.
	Recorded string `json:"recorded,omitempty"`
}

// parentRef names the parent activation of a subflow job.
type parentRef struct {
	Job  string `json:"job"`
	Act  string `json:"act"`
	Task []byte `json:"task"` // the parked parent task, CBOR
}

// Start creates a job of the named flow with input and publishes its entry
// activations. The job is durable once Start returns.
func (e *Engine) Start(ctx context.Context, flow string, input json.RawMessage) (runtype.JobID, error) {
	job, _, err := e.StartOnce(ctx, flow, "", input)
	return job, err
}

// StartOnce is Start under a caller's job key: the first start with a key
// creates the job, and every later one, on any worker and whatever the
// job's state (running, finished, failed, killed), returns that job and
// false instead of starting another. The key is claimed in the job's own
// transaction (a write-once record), so of two starts that race, one
// commits and the other finds its job. A key that names a job of another
// flow is refused with ErrKeyInUse. An empty key is Start.
func (e *Engine) StartOnce(ctx context.Context, flow, key string, input json.RawMessage) (runtype.JobID, bool, error) {
	c, err := e.flows.flow(flow)
	if err != nil {
		return runtype.JobID{}, false, err
	}
	s, err := e.newStart(ctx, c, key, input)
	if err != nil {
		return runtype.JobID{}, false, fmt.Errorf("start %s: %w", flow, err)
	}
	job := s.job
	run := e.worker.takeLocal()
	var entered []*entry
	err = e.store.Update(ctx, func(tx store.Tx) error {
		var err error
		entered, err = e.writes.writeStart(tx, c, s, run != nil) // fn may run again
		return err
	})
	if err == nil {
		e.writes.formatRecorded.Store(true) // the start recorded it, if it had to
	}
	if run != nil {
		if err != nil {
			entered = nil
		}
		run.takeOn(e.worker, entered)
	}
	s.traced(err)
	if key != "" && errors.Is(err, store.ErrConflict) {
		return e.startedUnder(ctx, c.Name, key)
	}
	if err != nil {
		return runtype.JobID{}, false, fmt.Errorf("start %s: %w", flow, err)
	}
	return job, true, nil
}

// start is a new job, encoded before its transaction.
type start struct {
	job   runtype.JobID
	key   string
	rec   encodedJob
	claim []byte // the job key's record; nil without a key
	// traced ends the span of the start with the start's outcome.
	traced func(error)
}

// newStart prepares a job of c with input under key (none when empty),
// opening its trace under ctx's span (tracing.go).
func (e *Engine) newStart(ctx context.Context, c *compiled, key string, input json.RawMessage) (start, error) {
	if err := e.writes.checkFormat(ctx); err != nil {
		return start{}, err
	}
	job, err := runtype.NewJobID()
	if err != nil {
		return start{}, err
	}
	now := e.writes.now().UTC()
	s := start{job: job, key: key}
	tp, traced := e.tracing.startJob(ctx, c.Name, job)
	s.traced = traced
	s.rec, err = encodeJob(job, c, jobMeta{Flow: c.Name, Version: c.Version, Hash: c.hash, Input: input, Started: now, Budget: budgetFrom(c.Budget, now), Key: key, Trace: tp}, c.entries)
	if err != nil {
		traced(err)
	}
	if err != nil || key == "" {
		return s, err
	}
	s.claim, err = json.Marshal(protocol.StartKeyRecord{Job: job.String(), Flow: c.Name})
	return s, err
}

// writeStart writes s in tx: the job key's record, write-once (ErrConflict
// when the key names a job already), and the job. With local set, the
// job's entry activations are published reserved to this engine and
// entered (local.go), and writeStart returns their deliveries.
func (pw *protocolWriter) writeStart(tx store.Tx, c *compiled, s start, local bool) ([]*entry, error) {
	if !pw.formatRecorded.Load() {
		if err := protocol.RecordFormat(tx); err != nil {
			return nil, err
		}
	}
	if s.key != "" {
		if err := tx.PutOnce(protocol.StartKey(s.key), s.claim); err != nil {
			return nil, err
		}
	}
	// A fresh UUIDv7 names no job yet: no read to find out (a round trip
	// on PostgreSQL), and the meta's put-once still guards it.
	ps, err := pw.writeJob(tx, s.job, s.rec, local)
	if err != nil {
		return nil, err
	}
	return pw.enterStarted(tx, ps)
}

// checkFormat refuses a store whose format this release cannot read. It
// reads the format once per engine (concurrent callers share the read; a
// failed read is tried again by the next caller), so it costs one read
// transaction in the engine's life.
func (pw *protocolWriter) checkFormat(ctx context.Context) error {
	if pw.formatRead.Load() {
		return nil
	}
	pw.formatMu.Lock()
	defer pw.formatMu.Unlock()
	if pw.formatRead.Load() {
		return nil
	}
	f, err := protocol.ReadFormat(ctx, pw.store)
	if err != nil {
		return err
	}
	pw.formatRecorded.Store(f.Recorded)
	pw.formatRead.Store(true)
	return nil
}

// startedUnder returns the job that key names, which a start that lost
// the key to another found.
func (e *Engine) startedUnder(ctx context.Context, flow, key string) (runtype.JobID, bool, error) {
	var claim protocol.StartKeyRecord
	if err := e.viewJSON(ctx, protocol.StartKey(key), &claim); err != nil {
		return runtype.JobID{}, false, fmt.Errorf("start %s under key %q: %w", flow, key, err)
	}
	job, err := runtype.ParseJobID(claim.Job)
	if err != nil {
		return runtype.JobID{}, false, fmt.Errorf("start %s under key %q: %w", flow, key, err)
	}
	if claim.Flow != flow {
		return job, false, fmt.Errorf("start %s under key %q: the key names job %s of flow %s: %w", flow, key, job, claim.Flow, runtype.ErrKeyInUse)
	}
	return job, false, nil
}

// createJob writes a job's meta, status and semaphore and publishes the
// given entry activations, in the caller's transaction. Creating the same
// job again is a no-op, so a replayed parent step starts its subflow once.
func (pw *protocolWriter) createJob(tx store.Tx, job runtype.JobID, c *compiled, meta jobMeta, entries []string) error {
	if _, err := tx.Get(protocol.MetaKey(job)); err == nil {
		return nil
	}
	rec, err := encodeJob(job, c, meta, entries)
	if err != nil {
		return err
	}
	_, err = pw.writeJob(tx, job, rec, false)
	return err
}

// encodedJob is a new job's meta with the records writeJob stores and
// the messages of its entry activations, encoded before the transaction
// (on bbolt, whose commits run one at a time, nothing is encoded inside
// one).
type encodedJob struct {
	meta         jobMeta
	raw, indexed []byte
	entries      []task
	messages     []store.Message
}

// encodeJob encodes what writeJob stores for job of c with meta, whose
// entry activations are those of the nodes entries.
func encodeJob(job runtype.JobID, c *compiled, meta jobMeta, entries []string) (encodedJob, error) {
	meta.Recorded = nextPlace(meta.Started)
	raw, err := json.Marshal(meta)
	if err != nil {
		return encodedJob{}, err
	}
	indexed, err := indexEntry(meta)
	if err != nil {
		return encodedJob{}, err
	}
	input, ref := boundaryOf(meta.Input)
	ts := make([]task, len(entries))
	for i, alias := range entries {
		ts[i] = task{Kind: protocol.Entry, Flow: c.key, Node: alias, Act: runtype.EntryOf(alias).String(), Input: input, InputRef: ref}
		if meta.Parent == nil {
			ts[i].Started = meta.Started.UnixNano()
		}
	}
	meta.Budget.stamp(ts)
	ms := make([]store.Message, len(ts))
	for i, t := range ts {
		if ms[i], err = protocol.TaskMessage(job, t, meta.Started); err != nil {
			return encodedJob{}, err
		}
	}
	return encodedJob{meta: meta, raw: raw, indexed: indexed, entries: ts, messages: ms}, nil
}

// writeJob is createJob for a job that does not exist yet, encoded. With
// reserve set, the entry activations' messages are published reserved to
// this engine, and writeJob returns them (a refused one excepted: it goes
// to the stream, see spend).
func (pw *protocolWriter) writeJob(tx store.Tx, job runtype.JobID, rec encodedJob, reserve bool) ([]publishedStep, error) {
	meta := rec.meta
	if err := tx.PutOnce(protocol.MetaKey(job), rec.raw); err != nil {
		return nil, err
	}
	if err := tx.Put(protocol.JobIndexKey(job), rec.indexed); err != nil {
		return nil, err
	}
	// No status: a job without one is running (readStatus).
	if err := tx.Bump(protocol.SemKey(job), int64(len(rec.entries)), maxSemaphore); err != nil {
		return nil, err
	}
	if err := storeBoundary(tx, meta.Input); err != nil {
		return nil, err
	}
	// A budget may refuse entries (one smaller than the flow's entry
	// nodes): a refused one travels in a message encoded here. The
	// encoded tasks are left as they are, since this function may run
	// again.
	ts := rec.entries
	if meta.Budget.MaxActivations > 0 {
		ts = slices.Clone(ts)
	}
	if err := spend(tx, job, meta.Budget, ts); err != nil {
		return nil, err
	}
	var reserved []publishedStep
	for i, m := range rec.messages {
		var err error
		switch {
		case ts[i].Refused != rec.entries[i].Refused:
			err = pw.publish(tx, job, ts[i])
		case reserve:
			m, err = tx.EnqueueReserved(m, pw.opts.Owner, pw.opts.Visibility)
			reserved = append(reserved, publishedStep{m, rec.entries[i]})
		default:
			err = tx.Enqueue(m)
		}
		if err != nil {
			return nil, err
		}
	}
	return reserved, nil
}

// defaultBatch is how many ready messages a worker claims at once on a
// store whose transactions lock rows (PostgreSQL): a claim holds the rows
// of what it folds until it commits.
const defaultBatch = 16

// defaultBatchOneWriter is the same on a store with one writer (bbolt),
// where every claim is a write transaction through that writer and locks
// nothing: fewer, larger claims carried a 1-to-100 fan-out 10-15% further
// (BenchmarkFanOutFlow at 64 against 16). Every claimed delivery goes on
// at once there, so this is also how many activations a worker runs at a
// time.
const defaultBatchOneWriter = 64

// maxSemaphore bounds the open obligations of one job.
const maxSemaphore = 1 << 40

// task is the payload of a work message: one activation to run
// (protocol.Task).
type task = protocol.Task

// publish puts t on the work stream as a message of job.
func (pw *protocolWriter) publish(tx store.Tx, job runtype.JobID, t task) error {
	m, err := protocol.TaskMessage(job, t, pw.now())
	if err != nil {
		return err
	}
	return tx.Enqueue(m)
}

// publishReserved is publish of a task this worker takes on itself: the
// message is born reserved to it, as Reserve would have returned it.
func (pw *protocolWriter) publishReserved(tx store.Tx, job runtype.JobID, t task) (store.Message, error) {
	m, err := protocol.TaskMessage(job, t, pw.now())
	if err != nil {
		return m, err
	}
	return tx.EnqueueReserved(m, pw.opts.Owner, pw.opts.Visibility)
}

// Run works until ctx is cancelled, with the given number of concurrent
// workers, and returns nil then. A failed step (a lost database connection,
// a fenced commit) is logged and retried after a backoff: the message comes
// back after its visibility timeout and the ledgers skip what committed.
// Idle workers wait for the store's publish notifications (Store.Notify),
// and poll with a short backoff when it cannot give them. On a store
// with one writer, a Run also takes on the jobs its engine starts while it
// works, without claiming them, and hands back those it has not taken on
// when it stops (local.go). It returns at once, with an error wrapping
// protocol.ErrNewerFormat, on a store a newer release wrote.
func (e *Engine) Run(ctx context.Context, workers int) error {
	if err := e.writes.checkFormat(ctx); errors.Is(err, protocol.ErrNewerFormat) {
		return err // any other error: the steps will find out, and retry
	}
	wake, notified := e.worker.wakeups(ctx)
	lim := e.worker.limits(workers)
	lim.wake = wake
	stopLocal := e.worker.runLocally(ctx, lim, max(workers, 1)*e.opts.Batch)
	var wg sync.WaitGroup
	wg.Go(func() { e.schedules.Run(ctx) })
	wg.Go(func() { e.sweeper.Run(ctx) })
	for range max(workers, 1) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			idle, failed := time.Millisecond, 10*time.Millisecond
			for ctx.Err() == nil {
				n, err := e.worker.stepBatch(ctx, e.opts.Batch, lim)
				if err != nil {
					if ctx.Err() != nil {
						return
					}
					if errors.Is(err, store.ErrFenced) {
						e.metrics.Add(observe.Fenced, 1)
					}
					e.log.Warn("step failed; will retry", "err", err, "in", failed)
					sleepCtx(ctx, failed)
					failed = min(failed*2, time.Second)
					continue
				}
				failed = 10 * time.Millisecond
				if n == e.opts.Batch {
					wake.pass() // a full batch: there is likely more
					idle = time.Millisecond
					continue
				}
				// The stream had no more: wait until a commit publishes
				// (the store's notification, or a commit of this process
				// that published for itself) or, for messages that become
				// visible with time (retries, expired reservations), the
				// next poll.
				poll := idle
				if notified {
					poll = notifiedPoll
				}
				select {
				case <-ctx.Done():
				case <-wake.wait():
				case <-time.After(poll):
				}
				idle = min(idle*2, unnotifiedPoll)
			}
		}()
	}
	wg.Wait()
	stopLocal()
	e.writes.releaseLeases()
	return nil
}

// releaseLeases ends this engine's job leases after its workers stopped:
// a worker that shuts down cleanly hands its jobs over at once.
func (pw *protocolWriter) releaseLeases() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	pw.held.Range(func(job, l any) bool {
		err := pw.store.Update(ctx, func(tx store.Tx) error { return tx.ReleaseLease(l.(store.Lease)) })
		if err != nil {
			pw.log.Warn("releasing a lease at shutdown; it expires by itself", "err", err)
		}
		pw.held.Delete(job)
		return true
	})
}

func sleepCtx(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}

// wakeups subscribes to the store's publish notifications, if it has them,
// and returns the baton they pass to idle workers, and whether they come.
func (w *worker) wakeups(ctx context.Context) (*baton, bool) {
	b := newBaton()
	ch, err := w.store.Notify(ctx, runtype.WorkStream)
	if err != nil {
		w.log.Warn("no publish notifications; polling", "err", err)
		return b, false
	}
	go func() {
		for range ch {
			b.pass()
		}
	}()
	return b, true
}

// An idle worker polls every notifiedPoll when the store notifies it of
// new messages (only messages that become visible with time need a poll),
// and otherwise backs off from 1 ms to unnotifiedPoll.
const (
	notifiedPoll   = 250 * time.Millisecond
	unnotifiedPoll = 50 * time.Millisecond
)

// baton wakes idle workers one at a time: a publish notification wakes
// one, and each worker that finds work passes the baton to the next, so
// as many wake as there is work for, instead of every idle worker of
// every process querying at once on each commit.
type baton struct{ ch chan struct{} }

func newBaton() *baton { return &baton{ch: make(chan struct{}, 1)} }

// wait returns the channel an idle worker waits on.
func (b *baton) wait() <-chan struct{} { return b.ch }

// pass wakes one waiting worker (or the next to wait); it never blocks.
func (b *baton) pass() {
	select {
	case b.ch <- struct{}{}:
	default:
	}
}
