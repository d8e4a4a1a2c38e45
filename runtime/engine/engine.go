package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"time"

	"github.com/flowgen-dev/flowgen/runtime"
	core "github.com/flowgen-dev/flowgen/runtime/internal/engine"
	"github.com/flowgen-dev/flowgen/runtime/internal/protocol"
	"github.com/flowgen-dev/flowgen/runtime/observe"
	"github.com/flowgen-dev/flowgen/runtime/runtype"
	"github.com/flowgen-dev/flowgen/runtime/store"
)

// WorkStream is the stream every activation message travels on.
const WorkStream = runtype.WorkStream

// Options configure an Engine; the zero value is usable.
type Options struct {
	// Owner names this worker in leases and logs; a random name when empty.
	Owner string
	// Visibility is how long a reserved message stays invisible before it
	// is redelivered to another worker (default 30s).
	Visibility time.Duration
	// LeaseTTL is how long a worker holds a job between steps (default 30s).
	LeaseTTL time.Duration
	// Timeout bounds one node attempt when its NodeInfo sets none (default 1m).
	Timeout time.Duration
	// Capabilities grants capabilities to an activation; nil grants none.
	Capabilities func(info runtime.NodeInfo) runtime.Capabilities
	// CrashPoint, when set, is called at every boundary of the step
	// protocol with the point's name; a non-nil error aborts processing
	// there as if the process died. Fault-injection tests use it.
	CrashPoint func(point string) error
	// Batch is how many ready messages a worker of Run claims at once
	// (default 16 on PostgreSQL, 64 on bbolt): one transaction reserves
	// and enters them all and, on PostgreSQL, also commits the steps of
	// those whose nodes have no effects. A worker may run up to Batch
	// activations at a time.
	Batch int
	// Logger receives structured logs; slog.Default() when nil.
	Logger *slog.Logger
	// Now is the engine's clock for dedupe expiry and budget deadlines;
	// time.Now when nil. Use the store's clock in tests.
	Now func() time.Time
	// After is the engine's timer, on the same clock as Now: it paces the
	// lease renewal of a heartbeating node. time.After when nil; tests
	// pass a fake clock's (testharness.Clock.After) to drive it.
	After func(time.Duration) <-chan time.Time
	// Retention is how long a finished job is kept, with its state,
	// history and job key, when its flow sets no Retention (default 7
	// days; negative: for good). Acknowledged message ids are kept as
	// long, and at least a minute and two Visibility timeouts.
	Retention time.Duration
	// SweepEvery is how often Run sweeps the store (Engine.Sweep; default
	// 1m; negative: never).
	SweepEvery time.Duration
	// SweepBatch bounds the deletions of one sweeper commit (default 500).
	SweepBatch int
	// Metrics, when set, receives the engine's counts and durations
	// (docs/observability.md lists them; telemetry/prommetrics exports
	// them to Prometheus). Engines may share one.
	Metrics observe.Metrics
	// ModuleDir is where the relative paths of confined connectors'
	// modules (runtime.Confined.Path) start: generated flows write them
	// relative to the root of the flow's Go module. The working directory
	// when empty.
	ModuleDir string
	// ModuleCache keeps compiled modules across processes (default: a
	// directory under the user's cache directory); "-" compiles every
	// module once per process.
	ModuleCache string
	// Tracing, when set, traces jobs: a span for each job's start, whose
	// context the job keeps, and one for each activation attempt under it,
	// on any worker and after any restart (docs/observability.md;
	// telemetry/oteltraces traces with OpenTelemetry). Give the HTTP
	// capability a transport that traces (oteltraces.Transport as
	// Grants.Transport) for client spans and traceparent headers.
	Tracing observe.Tracer
}

// ErrNewerFormat: the store was written by a release with a newer on-disk
// format than this one reads (the store's format version is kept in the
// store; docs/runtime.md). Nothing was read or written.
var ErrNewerFormat = protocol.ErrNewerFormat

// Crash points, in protocol order. Steps 1 and 2 commit in one
// transaction, with the ack, and with step 3 when the message closes its
// job; the points after that commit fire in order all the same, so a crash
// test visits each.
const (
	CrashReserved = runtype.CrashReserved // message reserved, nothing written
	CrashEntered  = runtype.CrashEntered  // entry counted, work not started
	CrashWorked   = runtype.CrashWorked   // node ran (effects happened), step 1 not committed
	CrashStep2    = runtype.CrashStep2    // steps 1 and 2 committed
	CrashStep3    = runtype.CrashStep3    // the job completed (the closing message only)
	CrashAcked    = runtype.CrashAcked    // message acknowledged
	// Points after commits outside the step protocol: each commit of the
	// retention sweeper (Sweep), of a schedule's ticks (StartDue), and of
	// a dead letter's requeue or fail.
	CrashSwept     = runtype.CrashSwept
	CrashScheduled = runtype.CrashScheduled
	CrashRevived   = runtype.CrashRevived
)

// CrashPoints lists every crash point in protocol order.
var CrashPoints = runtype.CrashPoints

// Engine runs registered flows on a store. It is safe for concurrent use;
// several engines (processes) may share one store.
//
// The engine itself lives below this package (runtime/internal/engine);
// Engine gives it the node API: it adapts each Runner, giving it its
// Context and the capabilities Options.Capabilities grants.
type Engine struct {
	core    *core.Engine
	grant   func(info runtime.NodeInfo) runtime.Capabilities
	modules *modules
}

// New returns an engine on s.
func New(s store.Store, opts Options) *Engine {
	return &Engine{
		core: core.New(s, core.Options{
			Owner:      opts.Owner,
			Visibility: opts.Visibility,
			LeaseTTL:   opts.LeaseTTL,
			Timeout:    opts.Timeout,
			CrashPoint: opts.CrashPoint,
			Batch:      opts.Batch,
			Logger:     opts.Logger,
			Now:        opts.Now,
			After:      opts.After,
			Retention:  opts.Retention,
			SweepEvery: opts.SweepEvery,
			SweepBatch: opts.SweepBatch,
			Metrics:    opts.Metrics,
			Tracing:    opts.Tracing,
		}),
		grant:   opts.Capabilities,
		modules: newModules(opts),
	}
}

// Register makes a flow's definition runnable. Versions of a flow are
// registered side by side: a job runs to its end on the definition it
// started on (its version and content hash), and Start picks the newest
// version unless one is named. Registering the same definition again
// replaces its build; other content under a version registered before is
// refused. A flow whose nodes or edges do not fit together is refused
// with an error that names the node or edge. The flow's schedules are
// added to the engine (AddSchedule).
//
// A confined connector's node (runtime.ConfinedNode) is loaded here: its
// module is read, checked against the certified digest and the
// connector's declaration, compiled once, and run from then on in the
// engine's wasm host (runtime/wasmhost); a module that fails any of it
// refuses the flow, naming the node and why.
func (e *Engine) Register(f *runtime.Flow) error {
	loaded, err := f.LoadConfined(e.modules.load)
	if err != nil {
		return fmt.Errorf("flow %s: %w", f.Name, err)
	}
	f = loaded
	if err := e.core.Register(engineFlow(f, e.grant)); err != nil {
		return err
	}
	for _, s := range f.Schedules {
		s.Flow = f.Name
		if err := e.core.AddSchedule(s); err != nil {
			return fmt.Errorf("flow %s: %w", f.Name, err)
		}
	}
	return nil
}

// Signal records a decision for every activation of the checkpoint node
// alias that waits in the job, and resumes them; it returns how many it
// resumed. A decision is final: signalling the same activation again does
// not change it.
func (e *Engine) Signal(ctx context.Context, job runtime.JobID, alias string, d runtime.Decision) (int, error) {
	return e.core.Signal(ctx, job, alias, d)
}

// Kill stops a job from the top: a tombstone on its root makes every
// activation not yet run finish as canceled without running its node, so
// the job drains and ends in StateKilled. Activations already running
// finish their current attempt; parked checkpoints are released. Killing a
// job twice keeps the first reason; killing a finished job changes nothing.
func (e *Engine) Kill(ctx context.Context, job runtime.JobID, reason string) error {
	return e.core.Kill(ctx, job, reason)
}

// Pause holds a job and the subflow jobs it started: their messages are
// handed back unprocessed until Resume. Activations already running
// finish their current attempt. Kill beats pause: pausing a killed job
// does nothing, and killing a paused job lets it wind down at once.
func (e *Engine) Pause(ctx context.Context, job runtime.JobID) error {
	return e.core.Pause(ctx, job)
}

// Resume lets a paused job, and the subflow jobs it started, continue.
func (e *Engine) Resume(ctx context.Context, job runtime.JobID) error {
	return e.core.Resume(ctx, job)
}

// Inspect returns everything the store holds about a job, from one prefix
// scan of its root: values (results decoded from JSON) and counters
// (ledgers decoded into words).
func (e *Engine) Inspect(ctx context.Context, job runtime.JobID) (*runtime.Inspection, error) {
	return e.core.Inspect(ctx, job)
}

// Start creates a job of the named flow with input and publishes its entry
// activations (on the embedded store, to this engine's Run if one works:
// see Run). The job is durable once Start returns. flow is a name (the
// newest version registered) or name@version; ErrUnknownFlow or
// ErrFlowVersionMissing when the engine has neither.
func (e *Engine) Start(ctx context.Context, flow string, input json.RawMessage) (runtime.JobID, error) {
	return e.core.Start(ctx, flow, input)
}

// StartOnce is Start under a caller's job key, so that a start the caller
// repeats (a retried request, a second producer) never creates a second
// job: the first start with key creates the job and reports true; every
// later one, on any worker of the store and whatever the job's state by
// then (finished, failed or killed included), returns that same job and
// false. Two starts that race are decided by the store: one commits the
// key with its job, the other finds it. A key that names a job of another
// flow fails with ErrKeyInUse. An empty key is Start.
func (e *Engine) StartOnce(ctx context.Context, flow, key string, input json.RawMessage) (runtime.JobID, bool, error) {
	return e.core.StartOnce(ctx, flow, key, input)
}

// Run works until ctx is cancelled, with the given number of concurrent
// workers, and returns nil then. A failed step (a lost database connection,
// a fenced commit) is logged and retried after a backoff: the message comes
// back after its visibility timeout and the ledgers skip what committed.
// Idle workers wait for the store's publish notifications (Store.Notify),
// and poll with a short backoff when it cannot give them. On the
// embedded store, a Run also takes on the jobs its engine starts while it
// works, without claiming them, and hands back those it has not taken on
// when it stops. It returns at once, with an error wrapping
// ErrNewerFormat, on a store a newer release wrote; Start refuses such a
// store the same way.
func (e *Engine) Run(ctx context.Context, workers int) error {
	return e.core.Run(ctx, workers)
}

// Step processes at most one message and reports whether it found one. The
// reservation, the job lease and the entry count commit together.
func (e *Engine) Step(ctx context.Context) (bool, error) {
	return e.core.Step(ctx)
}

// StepBatch claims up to max ready messages and processes them, and
// reports how many it claimed. The reservations, job leases and entry
// counts of all of them commit together; on PostgreSQL the Pure nodes
// among them also run and commit their steps in that one commit, each
// undone alone if its steps fail, and the others go on concurrently with
// commits of their own. Run's workers use it.
func (e *Engine) StepBatch(ctx context.Context, max int) (int, error) {
	return e.core.StepBatch(ctx, max)
}

// DeadLetters lists the dead letters of the engine's store, oldest first:
// the messages no worker can take on (a task that does not decode, a
// flow no worker has), each holding its job up until it is requeued or
// failed. An activation that can never make progress (a crash loop, a
// ledger at its ceiling) fails as Exhausted instead.
func (e *Engine) DeadLetters(ctx context.Context) ([]runtime.DeadLetter, error) {
	return e.core.DeadLetters(ctx)
}

// RequeueDeadLetter puts dead letter id back on the work stream as a new
// message, with a fresh delivery budget, and returns its id; the dead
// letter goes in the same commit. Requeueing it again returns the same id
// and does nothing more. ErrNotFound (store) when there is no such dead
// letter; ErrDeadLetterTaken when it was failed.
func (e *Engine) RequeueDeadLetter(ctx context.Context, id runtime.MessageID) (runtime.MessageID, error) {
	return e.core.TakeDeadLetter(ctx, id, runtype.Requeue, "")
}

// FailDeadLetter is RequeueDeadLetter of a message that fails its
// activation as DeadLettered, with reason, instead of running it: the job
// goes on by its error policy and compensates if it fails. A worker that
// has the job's flow must take it. ErrUndecodable when the task does not
// decode (kill the job instead); ErrDeadLetterTaken when it was requeued.
func (e *Engine) FailDeadLetter(ctx context.Context, id runtime.MessageID, reason string) (runtime.MessageID, error) {
	return e.core.TakeDeadLetter(ctx, id, runtype.Fail, reason)
}

// The garbage collector settings flowgen's own programs (flowgen run,
// worker and serve, through serve/localrun) take unless the GOGC or
// GOMEMLIMIT environment variable sets them. Most of what a step
// allocates is bbolt's and short-lived, and with Go's default (GOGC 100)
// on a small live heap the collector ran often enough to cost about a
// fifth of the embedded store's throughput: a larger target trades
// memory for it, and the soft limit keeps a large backlog from growing
// the heap without bound. A program of yours that embeds the Engine
// keeps its own settings.
const (
	ProgramGCPercent   = 400
	ProgramMemoryLimit = 1 << 30 // bytes
)

// Flows lists the flow definitions the engine serves, by name, newest
// version first (the one Start runs when no version is named).
func (e *Engine) Flows() []runtime.FlowVersion { return e.core.Flows() }

// FlowGraph returns the graph of a served flow definition: ref is a name
// (its newest version), name@version or name#hash16. ErrUnknownFlow or
// ErrFlowVersionMissing when the engine does not serve it.
func (e *Engine) FlowGraph(ref string) (runtime.FlowGraph, error) { return e.core.FlowGraph(ref) }

// AddSchedule makes the engine start s's jobs: Run looks about once a
// second, StartDue when called. Every tick's job is started under a job
// key of the schedule's name and the tick, so of all the processes with
// the schedule one starts each tick's job, once. Ticks missed while no
// process ran are started when one comes back (up to s.CatchUp old), and
// a tick that comes while the last tick's job still runs is skipped,
// buffered or started by s.Overlap.
func (e *Engine) AddSchedule(s runtime.Schedule) error { return e.core.AddSchedule(s) }

// StartDue starts the jobs of the engine's schedule ticks that came due
// and returns how many it started.
func (e *Engine) StartDue(ctx context.Context) (int, error) { return e.core.StartDue(ctx) }

// Jobs lists the jobs of the engine's store that match q, newest first.
func (e *Engine) Jobs(ctx context.Context, q runtime.JobQuery) (runtime.JobList, error) {
	return e.core.Jobs(ctx, q)
}

// Waiting returns the checkpoint nodes of job that wait for a decision.
func (e *Engine) Waiting(ctx context.Context, job runtime.JobID) ([]string, error) {
	return e.core.Waiting(ctx, job)
}

// Sweep deletes, in bounded commits, what retention lets go of by now:
// finished jobs past their flow's retention (Flow.Retention, else
// Options.Retention) with their state, history, job key and lease; dedupe
// records and cache entries past their TTL; stored inputs no job refers
// to; acknowledged message ids older than the retention. Run calls it
// every Options.SweepEvery. Several processes may call it at once: one
// sweeps, the others return Swept.Busy.
func (e *Engine) Sweep(ctx context.Context) (runtime.Swept, error) { return e.core.Sweep(ctx) }

// Status returns the job's current status.
func (e *Engine) Status(ctx context.Context, job runtime.JobID) (runtime.JobStatus, error) {
	return e.core.Status(ctx, job)
}

// Wait polls until the job finishes or ctx ends.
func (e *Engine) Wait(ctx context.Context, job runtime.JobID) (runtime.JobStatus, error) {
	return e.core.Wait(ctx, job)
}

// ListJobs lists the jobs in s that match q, newest first. It reads the
// job index and, for each candidate, its status; it needs no registered
// flows, so a command-line tool can list the jobs of any store.
func ListJobs(ctx context.Context, s store.Store, q runtime.JobQuery) (runtime.JobList, error) {
	return core.ListJobs(ctx, s, q)
}

// WaitingCheckpoints returns the checkpoint nodes of job that wait for a
// decision (flowgen signal), in activation order; none once it finished.
func WaitingCheckpoints(ctx context.Context, s store.Store, job runtime.JobID) ([]string, error) {
	return core.WaitingCheckpoints(ctx, s, job)
}

// InspectJob reads a job's whole state from s without an engine: one
// prefix scan of its root (values and counters), plus the job's messages
// still in the work stream or its dead-letter stream, which name the
// activations not yet finished.
func InspectJob(ctx context.Context, s store.Store, job runtime.JobID) (*runtime.Inspection, error) {
	return core.InspectJob(ctx, s, job)
}

// IdempotencyKey is the key the engine gives an activation of the flow node
// named node with this input: lowercase hex of the canonical key over the
// node's key fields (dotted paths into the input). Empty when the node
// declares no key fields. Generated IdempotencyKey functions compute the
// same key from typed input.
func IdempotencyKey(info runtime.NodeInfo, node string, input json.RawMessage) (string, error) {
	return core.IdempotencyKey(info, node, input)
}

// DeliveryBudget is how many times the engine may deliver one activation
// of a node with this retry policy: its attempts, and the deliveries
// whose worker crashed or stopped before recording an outcome. Attempt
// numbers run from 1 to it.
func DeliveryBudget(retry runtime.RetryPolicy) int { return core.DeliveryBudget(retry) }
