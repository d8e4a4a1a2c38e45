package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/flowgen-dev/flowgen/internal/crashpoint"
	"github.com/flowgen-dev/flowgen/runtime"
	core "github.com/flowgen-dev/flowgen/runtime/internal/engine"
	"github.com/flowgen-dev/flowgen/runtime/store"
	"github.com/flowgen-dev/flowgen/runtime/store/boltstore"
	"github.com/flowgen-dev/flowgen/runtime/store/pgstore"
	"github.com/flowgen-dev/flowgen/runtime/store/pgstore/pgtest"
	"github.com/flowgen-dev/flowgen/runtime/store/storetest"
)

// sink is an external system that honours idempotency keys, as a payment
// API does: the first call with a key applies the effect, repeats return
// the first outcome. It counts both, outside the store, so tests can tell
// effects that happened twice from calls that were retried.
type sink struct {
	mu      sync.Mutex
	applied map[string]string // key -> payload of the applied effect
	calls   map[string]int
}

func newSink() *sink { return &sink{applied: map[string]string{}, calls: map[string]int{}} }

func (s *sink) apply(key, payload string) error {
	if key == "" {
		return runtime.Errorf(runtime.Permanent, "effect without idempotency key")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls[key]++
	if _, ok := s.applied[key]; !ok {
		s.applied[key] = payload
	}
	return nil
}

func (s *sink) effects() map[string]string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[string]string{}
	for k, v := range s.applied {
		out[k] = v
	}
	return out
}

type order struct {
	OrderID string `json:"order_id"`
	Method  string `json:"method"`
	Lines   []line `json:"lines"`
	Total   int    `json:"total,omitempty"`
}

type line struct {
	SKU string `json:"sku"`
	Qty int    `json:"qty"`
}

type priced struct {
	SKU   string `json:"sku"`
	Cents int    `json:"cents"`
}

type charged struct {
	OrderID string `json:"order_id"`
	Charged int    `json:"charged"`
}

type noParams struct{}

// orderFlow is a small order flow: normalize -> forEach(price) -> total ->
// switch on method -> charge (effectful, keyed by order_id) or invoice.
func orderFlow(s *sink) *runtime.Flow {
	normalize := runtime.Typed(runtime.NodeInfo{ID: "orders.normalize", Effects: runtime.Pure, Determinism: runtime.Strict},
		func(ctx *runtime.Context, _ noParams, in order) (order, error) { return in, nil })
	price := runtime.Typed(runtime.NodeInfo{ID: "catalog.price", Effects: runtime.ReadOnly, Determinism: runtime.BestEffort},
		func(ctx *runtime.Context, _ noParams, in line) (priced, error) {
			return priced{in.SKU, 100 * in.Qty}, nil
		})
	total := runtime.Typed(runtime.NodeInfo{ID: "orders.total", Effects: runtime.Pure, Determinism: runtime.Strict},
		func(ctx *runtime.Context, _ noParams, in []priced) (order, error) {
			o := order{OrderID: "from-lines", Method: "card"}
			for _, p := range in {
				o.Total += p.Cents
			}
			return o, nil
		})
	charge := runtime.Typed(runtime.NodeInfo{ID: "payments.charge", Effects: runtime.Effectful, Determinism: runtime.BestEffort,
		KeySchema: "payments.charge@1", KeyFields: []string{"order_id", "total"}},
		func(ctx *runtime.Context, _ noParams, in order) (charged, error) {
			if err := s.apply(ctx.IdempotencyKey(), fmt.Sprintf("%s:%d", in.OrderID, in.Total)); err != nil {
				return charged{}, err
			}
			return charged{in.OrderID, in.Total}, nil
		})
	invoice := runtime.Typed(runtime.NodeInfo{ID: "billing.invoice", Effects: runtime.Effectful, Determinism: runtime.BestEffort,
		KeySchema: "billing.invoice@1", KeyFields: []string{"order_id"}},
		func(ctx *runtime.Context, _ noParams, in order) (charged, error) {
			return charged{in.OrderID, 0}, s.apply(ctx.IdempotencyKey(), "invoice:"+in.OrderID)
		})
	return &runtime.Flow{
		Name: "orders",
		Nodes: []*runtime.FlowNode{
			{Alias: "normalize", Runner: normalize},
			{Alias: "lines", ForEach: &runtime.ForEach{Items: "lines", Do: "price"}},
			{Alias: "price", Runner: price},
			{Alias: "total", Runner: total},
			{Alias: "route", Switch: &runtime.Switch{On: "method", Cases: []runtime.Case{
				{Label: "card", Equals: json.RawMessage(`"card"`)},
				{Label: "invoice", Equals: json.RawMessage(`"invoice"`)},
			}}},
			{Alias: "charge", Runner: charge},
			{Alias: "invoice", Runner: invoice},
		},
		Edges: []runtime.Edge{
			{From: "normalize", FromPort: "out", To: "lines"},
			{From: "lines", FromPort: "out", To: "total"},
			{From: "total", FromPort: "out", To: "route"},
			{From: "route", FromPort: "card", To: "charge"},
			{From: "route", FromPort: "invoice", To: "invoice"},
		},
	}
}

const orderInput = `{"order_id":"o-1","method":"card","lines":[{"sku":"a","qty":1},{"sku":"b","qty":2},{"sku":"c","qty":3}]}`

type rig struct {
	t     *testing.T
	open  func(now func() time.Time) (store.Store, error)
	clock *storetest.Clock
	store store.Store
	sink  *sink
}

// backend makes the store of one test; every backend runs the same engine
// tests.
type backend struct {
	name string
	open func(t *testing.T) func(now func() time.Time) (store.Store, error)
}

var (
	boltBackend = backend{"bolt", func(t *testing.T) func(now func() time.Time) (store.Store, error) {
		path := filepath.Join(t.TempDir(), "flowgen.db")
		return func(now func() time.Time) (store.Store, error) {
			return boltstore.Open(path, boltstore.Options{Now: now, NoSync: true})
		}
	}}
	postgresBackend = backend{"postgres", func(t *testing.T) func(now func() time.Time) (store.Store, error) {
		url := pgtest.FreshSchema(t)
		return func(now func() time.Time) (store.Store, error) {
			return pgstore.Open(context.Background(), url, pgstore.Options{Now: now})
		}
	}}
	// postgresOneWriterBackend is PostgreSQL claiming none of its
	// capabilities, as a store with one writer does: the committers meant
	// for such a store (ran ahead, taken on) then run on PostgreSQL, so
	// that their protocol paths are proven on both stores.
	postgresOneWriterBackend = backend{"postgres-one-writer", func(t *testing.T) func(now func() time.Time) (store.Store, error) {
		open := postgresBackend.open(t)
		return func(now func() time.Time) (store.Store, error) {
			s, err := open(now)
			return oneWriter{s}, err
		}
	}}
	backends = []backend{boltBackend, postgresBackend}
	// extraBackends run only the tests that name them.
	extraBackends = []backend{postgresOneWriterBackend}
)

// oneWriter is a store that claims no capabilities (see
// postgresOneWriterBackend).
type oneWriter struct{ store.Store }

func (oneWriter) Capabilities() store.Capabilities { return store.Capabilities{} }

// newRig is a rig on the embedded store.
func newRig(t *testing.T) *rig { return newRigOn(t, boltBackend) }

func newRigOn(t *testing.T, b backend) *rig {
	r := &rig{t: t, open: b.open(t), clock: storetest.NewClock(), sink: newSink()}
	r.reopen()
	t.Cleanup(func() { r.store.Close() })
	return r
}

// reopen throws away the process: a fresh store handle on the same data.
func (r *rig) reopen() {
	r.t.Helper()
	if r.store != nil {
		r.store.Close()
	}
	s, err := r.open(r.clock.Now)
	if err != nil {
		r.t.Fatal(err)
	}
	r.store = s
}

func (r *rig) engine(owner string, crash func(string) error) *Engine {
	r.t.Helper()
	e := New(r.store, Options{Owner: owner, Visibility: 10 * time.Second, LeaseTTL: 10 * time.Second, CrashPoint: crash, Now: r.clock.Now})
	if err := e.Register(orderFlow(r.sink)); err != nil {
		r.t.Fatal(err)
	}
	return e
}

// drain steps the engine until no message is visible, claiming up to
// drainBatch messages at a time, so the crash and duplicate tests run
// through batches that fold several deliveries into one commit.
func drain(t *testing.T, e *Engine) error {
	t.Helper()
	for range 10_000 {
		n, err := e.StepBatch(context.Background(), drainBatch)
		if err != nil {
			return err
		}
		if n == 0 {
			return nil
		}
	}
	t.Fatal("engine did not drain in 10,000 steps")
	return nil
}

// assertFinished checks the state every correct run ends in: succeeded with
// the right total, one effect per key, semaphore at zero, no message left.
func (r *rig) assertFinished(job runtime.JobID) {
	t := r.t
	t.Helper()
	e := r.engine("checker", nil)
	st, err := e.Status(context.Background(), job)
	if err != nil {
		t.Fatal(err)
	}
	if st.State != runtime.StateSucceeded || string(st.Result["charge"]) != `{"order_id":"from-lines","charged":600}` {
		t.Fatalf("status %+v (result %s)", st, st.Result["charge"])
	}
	eff := r.sink.effects()
	if len(eff) != 1 {
		t.Fatalf("effects %v, want exactly one", eff)
	}
	for _, v := range eff {
		if v != "from-lines:600" {
			t.Fatalf("effect %q", v)
		}
	}
	if sem := counter(t, r.store, job, "sem"); sem != 0 {
		t.Fatalf("semaphore %d", sem)
	}
	err = r.store.View(context.Background(), func(tx store.ReadTx) error {
		pending, err := tx.Pending(WorkStream)
		if err != nil || len(pending) != 0 {
			return fmt.Errorf("%d messages left unacknowledged", len(pending))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestOrderFlowRuns(t *testing.T) {
	t.Parallel()
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) { orderFlowRuns(t, newRigOn(t, b)) })
	}
}

func orderFlowRuns(t *testing.T, r *rig) {
	e := r.engine("w1", nil)
	job, err := e.Start(context.Background(), "orders", json.RawMessage(orderInput))
	if err != nil {
		t.Fatal(err)
	}
	if err := drain(t, e); err != nil {
		t.Fatal(err)
	}
	r.assertFinished(job)
}

var errCrash = crashpoint.ErrCrash

// drainBatch is how many messages drain claims at once: the order flow's
// three lines fit in one batch.
const drainBatch = 4

// crashEverywhere runs a job once to count how often each crash point is
// reached, then, for every occurrence of every point, runs it again,
// crashes there, throws the process state away (only the store file
// survives), lets a new worker take over once the visibility timeout and
// lease have expired, and calls check on the finished job.
func crashEverywhere(t *testing.T, flows func(*sink) []*runtime.Flow, flow, input string, check func(t *testing.T, r *rig, job runtime.JobID)) {
	t.Helper()
	crashEverywhereThrough(t, flows, flow, input, check, nil)
}

// crashEverywhereThrough is crashEverywhere that also fails unless the
// crashing engines committed through each committer through names for
// their backend (core.Committer names): the enumeration crossed them. It
// runs on every backend, and on each extra backend through names.
func crashEverywhereThrough(t *testing.T, flows func(*sink) []*runtime.Flow, flow, input string, check func(t *testing.T, r *rig, job runtime.JobID), through map[string][]core.Committer) {
	t.Helper()
	engine := func(r *rig, owner string, crash func(string) error) *Engine {
		e := New(r.store, Options{Owner: owner, Visibility: 10 * time.Second, LeaseTTL: 10 * time.Second, CrashPoint: crash, Now: r.clock.Now})
		for _, f := range flows(r.sink) {
			if err := e.Register(f); err != nil {
				r.t.Fatal(err)
			}
		}
		return e
	}
	run := slices.Clone(backends)
	for _, b := range extraBackends {
		if _, named := through[b.name]; named {
			run = append(run, b)
		}
	}
	for _, b := range run {
		t.Run(b.name, func(t *testing.T) {
			used := crashEverywhereOn(t, b, engine, flow, input, check)
			for _, c := range through[b.name] {
				if used[c.String()] == 0 {
					t.Errorf("no crashing engine committed %s deliveries (committed: %v): the enumeration did not cross that committer", c, used)
				}
			}
		})
	}
}

// crashEverywhereOn runs the enumeration on b and returns how many
// deliveries the crashing engines committed through each committer.
func crashEverywhereOn(t *testing.T, b backend, engine func(*rig, string, func(string) error) *Engine, flow, input string, check func(t *testing.T, r *rig, job runtime.JobID)) map[string]int64 {
	var mu sync.Mutex
	used := map[string]int64{}
	crashpoint.Enumerate(t, crashpoint.Scenario{
		Points: CrashPoints,
		Start: func(t *testing.T, hook func(string) error) (func(), error) {
			r := newRigOn(t, b)
			crashing := engine(r, "doomed", hook)
			defer func() {
				mu.Lock()
				defer mu.Unlock()
				for k, v := range core.CommittersUsed(crashing.core) {
					used[k] += v
				}
			}()
			job, err := crashing.Start(context.Background(), flow, json.RawMessage(input))
			if err != nil {
				t.Fatal(err)
			}
			err = drain(t, crashing)
			return func() {
				r.reopen()                        // only the store survives
				r.clock.Advance(11 * time.Second) // visibility and lease expire
				if err := drain(t, engine(r, "heir", nil)); err != nil {
					t.Fatal(err)
				}
				check(t, r, job)
			}, err
		},
	})
	return used
}

// TestEveryCrashPoint: the order flow (fan-out, join, switch, an effect)
// survives a crash at every point with its effect exactly once.
func TestEveryCrashPoint(t *testing.T) {
	t.Parallel()
	crashEverywhereThrough(t, func(s *sink) []*runtime.Flow { return []*runtime.Flow{orderFlow(s)} }, "orders", orderInput,
		func(t *testing.T, r *rig, job runtime.JobID) { r.assertFinished(job) },
		map[string][]core.Committer{"bolt": {core.Inline, core.Chained}, "postgres": {core.Inline, core.Chained, core.Folded},
			"postgres-one-writer": {core.Inline, core.Chained}})
}

// TestDuplicateDelivery delivers every message several times, in shuffled
// order, including after it was acknowledged, and expects the same final
// state and effects as a clean run.
func TestDuplicateDelivery(t *testing.T) {
	t.Parallel()
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) { duplicateDelivery(t, newRigOn(t, b)) })
	}
}

func duplicateDelivery(t *testing.T, r *rig) {
	e := r.engine("w1", nil)
	job, err := e.Start(context.Background(), "orders", json.RawMessage(orderInput))
	if err != nil {
		t.Fatal(err)
	}
	deliverRepeatedly(t, r, e)
	r.assertFinished(job)
}

// deliverRepeatedly works the stream by hand: each message 2 to 10 times,
// an older one replayed after each, and all of them again in reverse order
// at the end.
func deliverRepeatedly(t *testing.T, r *rig, e *Engine) {
	t.Helper()
	var delivered []store.Message
	for round := 0; ; round++ {
		var m store.Message
		err := r.store.Update(context.Background(), func(tx store.Tx) error {
			ms, err := tx.Reserve(store.Claim{Stream: WorkStream, Owner: "w1", Visibility: time.Hour, Max: 1})
			if err == nil {
				m = ms[0]
			}
			return err
		})
		if errors.Is(err, store.ErrEmpty) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		delivered = append(delivered, m)
		copies := 2 + round%9 // 2..10 deliveries of each message
		for i := range copies {
			if err := e.core.Process(context.Background(), m); err != nil {
				t.Fatalf("delivery %d of %x: %v", i, m.ID, err)
			}
		}
		// Replay an older message too, out of order.
		if round > 0 {
			old := delivered[(round*7)%len(delivered)]
			if err := e.core.Process(context.Background(), old); err != nil {
				t.Fatalf("late replay: %v", err)
			}
		}
	}
	// And every message once more, in reverse order, after the job ended.
	sort.SliceStable(delivered, func(i, j int) bool { return i > j })
	for _, m := range delivered {
		if err := e.core.Process(context.Background(), m); err != nil {
			t.Fatal(err)
		}
	}
}

func TestKillPauseResumeAndInspect(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	e := r.engine("w1", nil)
	ctx := context.Background()
	job, err := e.Start(ctx, "orders", json.RawMessage(orderInput))
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Pause(ctx, job); err != nil {
		t.Fatal(err)
	}
	for range 5 { // paused: messages are handed back, nothing runs
		if _, err := e.Step(ctx); err != nil {
			t.Fatal(err)
		}
	}
	in, err := e.Inspect(ctx, job)
	if err != nil {
		t.Fatal(err)
	}
	for _, en := range in.Entries {
		if strings.HasPrefix(en.Key, "res/") {
			t.Fatalf("paused job ran %s", en.Key)
		}
	}
	if err := e.Resume(ctx, job); err != nil {
		t.Fatal(err)
	}
	r.clock.Advance(time.Second)
	if err := drain(t, e); err != nil {
		t.Fatal(err)
	}
	r.assertFinished(job)

	// Inspect decodes ledgers into words from one prefix scan.
	in, err = e.Inspect(ctx, job)
	if err != nil {
		t.Fatal(err)
	}
	words := map[string]string{}
	for _, en := range in.Entries {
		words[en.Key] = en.Words
	}
	if words["sem"] != "0 open obligations" || words["act/charge@<route"] != "leg2 entries=1, finalized" {
		t.Fatalf("inspection: %v", words)
	}

	// A killed job drains without running its nodes and ends killed.
	job2, err := e.Start(ctx, "orders", json.RawMessage(strings.Replace(orderInput, "o-1", "o-2", 1)))
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Kill(ctx, job2, "operator request"); err != nil {
		t.Fatal(err)
	}
	if err := drain(t, e); err != nil {
		t.Fatal(err)
	}
	st, err := e.Status(ctx, job2)
	if err != nil || st.State != runtime.StateKilled {
		t.Fatalf("killed job: %+v %v", st, err)
	}
	if len(r.sink.effects()) != 1 {
		t.Fatalf("killed job had effects: %v", r.sink.effects())
	}
	if err := e.Kill(ctx, runtime.JobID{1}, "x"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("kill of unknown job: %v", err)
	}
}

// TestRunManyJobs runs concurrent workers with Run (woken by notifications
// on PostgreSQL, polling on bbolt) until every job finishes.
func TestRunManyJobs(t *testing.T) {
	t.Parallel()
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			r := newRigOn(t, b)
			e := New(r.store, Options{Owner: "w"})
			if err := e.Register(orderFlow(r.sink)); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() { done <- e.Run(ctx, 4) }()
			var jobs []runtime.JobID
			for i := range 20 {
				in := strings.Replace(orderInput, "o-1", fmt.Sprintf("o-%d", i), 1)
				job, err := e.Start(context.Background(), "orders", json.RawMessage(in))
				if err != nil {
					t.Fatal(err)
				}
				jobs = append(jobs, job)
			}
			wctx, wcancel := context.WithTimeout(context.Background(), time.Minute)
			defer wcancel()
			for _, job := range jobs {
				if st, err := e.Wait(wctx, job); err != nil || st.State != runtime.StateSucceeded {
					t.Fatalf("job %s: %+v %v", job, st, err)
				}
			}
			cancel()
			if err := <-done; err != nil {
				t.Fatal(err)
			}
		})
	}
}

// inspected is what InspectJob reads of job.
func inspected(t *testing.T, s store.Store, job runtime.JobID) *runtime.Inspection {
	t.Helper()
	in, err := InspectJob(context.Background(), s, job)
	if err != nil {
		t.Fatal(err)
	}
	return in
}

// counters are the counters under job's root by key relative to it ("sem",
// "spent", "act/<act>"), as inspection reads them from the store.
func counters(t *testing.T, s store.Store, job runtime.JobID) map[string]int64 {
	t.Helper()
	out := map[string]int64{}
	for _, e := range inspected(t, s, job).Entries {
		if e.Counter != nil {
			out[e.Key] = *e.Counter
		}
	}
	return out
}

// counter is one counter of job's root; 0 when it was never written.
func counter(t *testing.T, s store.Store, job runtime.JobID, key string) int64 {
	t.Helper()
	return counters(t, s, job)[key]
}

// activityLedgers is each activation's activity ledger, by activation id,
// from inspection's activation tree.
func activityLedgers(t *testing.T, s store.Store, job runtime.JobID) map[string]int64 {
	t.Helper()
	out := map[string]int64{}
	eachActivation(inspected(t, s, job).Tree, func(v *runtime.ActivationView) { out[v.Act] = v.Ledger })
	return out
}

// activationStates is each activation's state, by activation id, from
// inspection's activation tree.
func activationStates(t *testing.T, s store.Store, job runtime.JobID) map[string]runtime.ActivationState {
	t.Helper()
	out := map[string]runtime.ActivationState{}
	eachActivation(inspected(t, s, job).Tree, func(v *runtime.ActivationView) { out[v.Act] = v.State })
	return out
}

// activationView is the inspection of activation act of job.
func activationView(t *testing.T, s store.Store, job runtime.JobID, act string) runtime.ActivationView {
	t.Helper()
	var found runtime.ActivationView
	eachActivation(inspected(t, s, job).Tree, func(v *runtime.ActivationView) {
		if v.Act == act {
			found = *v
		}
	})
	return found
}

// eachActivation calls fn for every activation of an inspection tree.
func eachActivation(vs []*runtime.ActivationView, fn func(*runtime.ActivationView)) {
	for _, v := range vs {
		fn(v)
		eachActivation(v.Children, fn)
	}
}

// crashEnumerate runs crashpoint.Enumerate over points on each backend,
// start building each case's scenario on a fresh rig.
func crashEnumerate(t *testing.T, points []string, start func(t *testing.T, r *rig, hook func(string) error) (func(), error)) {
	t.Helper()
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			crashpoint.Enumerate(t, crashpoint.Scenario{Points: points, Start: func(t *testing.T, hook func(string) error) (func(), error) {
				return start(t, newRigOn(t, b), hook)
			}})
		})
	}
}

// sagaWorker is an engine on r with the saga flow (nothing fails),
// 10-second leases and visibility, and crash as its crash hook.
func sagaWorker(t *testing.T, r *rig, owner string, crash func(string) error) *Engine {
	t.Helper()
	e := New(r.store, Options{Owner: owner, Now: r.clock.Now, Visibility: 10 * time.Second, LeaseTTL: 10 * time.Second, CrashPoint: crash})
	if err := e.Register(sagaFlow(r.sink, false)); err != nil {
		t.Fatal(err)
	}
	return e
}
