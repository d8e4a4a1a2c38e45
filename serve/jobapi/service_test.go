package jobapi_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/flowgen-dev/flowgen/flowir"
	"github.com/flowgen-dev/flowgen/runtime"
	"github.com/flowgen-dev/flowgen/runtime/engine"
	"github.com/flowgen-dev/flowgen/runtime/store"
	"github.com/flowgen-dev/flowgen/runtime/store/boltstore"
	"github.com/flowgen-dev/flowgen/serve/jobapi"
	"github.com/flowgen-dev/flowgen/telemetry/oteltraces"
)

type order struct {
	Order string `json:"order"`
}

func approvalFlow() *runtime.Flow {
	echo := func(id string) runtime.Runner {
		return runtime.Typed(runtime.NodeInfo{ID: id}, func(ctx *runtime.Context, _ struct{}, in order) (order, error) { return in, nil })
	}
	return &runtime.Flow{
		Name: "approval",
		Nodes: []*runtime.FlowNode{
			{Alias: "start", Runner: echo("t.start")},
			{Alias: "approve", Checkpoint: &runtime.Checkpoint{Prompt: "ship it?"}},
			{Alias: "ship", Runner: echo("t.ship")},
		},
		Edges: []runtime.Edge{
			{From: "start", FromPort: "out", To: "approve"},
			{From: "approve", FromPort: "approved", To: "ship"},
		},
	}
}

// rig is an engine with workers on a fresh embedded store, the store's
// path and the store.
func rig(t *testing.T) (*engine.Engine, string, store.Store) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "flowgen.db")
	s, err := boltstore.Open(path, boltstore.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	e := engine.New(s, engine.Options{Owner: "test"})
	other := approvalFlow()
	other.Name = "approval-again"
	for _, f := range []*runtime.Flow{approvalFlow(), other} {
		if err := e.Register(f); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- e.Run(ctx, 2) }()
	t.Cleanup(func() {
		cancel()
		<-done
		s.Close()
	})
	return e, path, s
}

// checkInput refuses inputs without an order, as a flow's schema would.
func checkInput(flow string, input []byte) error {
	var o order
	if json.Unmarshal(input, &o) != nil || o.Order == "" {
		return &flowir.InputError{Flow: flow, Problems: []flowir.InputProblem{{Path: "$.order", Message: "missing property 'order'"}}}
	}
	return nil
}

// serve runs the API over e and returns a client found through the
// endpoint file, as the flowgen commands find it.
func serve(t *testing.T, e *engine.Engine, storePath string) *jobapi.Client {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		done <- jobapi.Serve(ctx, "127.0.0.1:0", storePath, e, jobapi.HandlerOptions{CheckInput: checkInput, Info: jobapi.Info{Flows: []string{"approval"}}},
			func(jobapi.Endpoint) { close(ready) })
	}()
	select {
	case <-ready:
	case err := <-done:
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
		if _, err := os.Stat(jobapi.EndpointPath(storePath)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("endpoint file left behind: %v", err)
		}
	})
	c, err := jobapi.Discover(context.Background(), storePath)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestConformance runs the same job life cycle against the engine itself
// and against a client of a server over it: both must answer alike.
func TestConformance(t *testing.T) {
	t.Parallel()
	for _, remote := range []bool{false, true} {
		name := map[bool]string{false: "engine", true: "client"}[remote]
		t.Run(name, func(t *testing.T) {
			e, path, s := rig(t)
			var svc jobapi.Service = e
			if remote {
				svc = serve(t, e, path)
			}
			conformance(t, svc, remote)
			deadLetterConformance(t, svc, s)
		})
	}
}

func conformance(t *testing.T, svc jobapi.Service, checksInput bool) {
	ctx := context.Background()
	job, err := svc.Start(ctx, "approval", json.RawMessage(`{"order":"o-1"}`))
	if err != nil {
		t.Fatal(err)
	}
	out, err := jobapi.Await(ctx, svc, job, time.Minute)
	if err != nil || out.Finished || !slices.Equal(out.Waiting, []string{"approve"}) {
		t.Fatalf("await: %+v %v, want waiting at approve", out, err)
	}
	list, err := svc.Jobs(ctx, runtime.JobQuery{State: "waiting", Where: map[string]string{"order": "o-1"}})
	if err != nil || len(list.Jobs) != 1 || list.Jobs[0].Job != job.String() {
		t.Fatalf("jobs: %+v %v", list, err)
	}
	if err := svc.Pause(ctx, job); err != nil {
		t.Fatal(err)
	}
	if list, _ := svc.Jobs(ctx, runtime.JobQuery{State: "paused"}); len(list.Jobs) != 1 {
		t.Fatalf("paused: %+v", list)
	}
	if err := svc.Resume(ctx, job); err != nil {
		t.Fatal(err)
	}
	if n, err := svc.Signal(ctx, job, "approve", runtime.Decision{Approved: true, By: "finance"}); err != nil || n != 1 {
		t.Fatalf("signal: %d %v", n, err)
	}
	if out, err = jobapi.Await(ctx, svc, job, time.Minute); err != nil || !out.Finished || out.Status.State != runtime.StateSucceeded {
		t.Fatalf("after the decision: %+v %v", out, err)
	}
	if string(out.Status.Result["ship"]) != `{"order":"o-1"}` {
		t.Fatalf("result %s", out.Status.Result)
	}
	in, err := svc.Inspect(ctx, job)
	if err != nil || in.Status.State != runtime.StateSucceeded || len(in.Tree) != 3 || in.Tree[1].Port != "approved" || in.Tree[2].Finished.IsZero() {
		t.Fatalf("inspect: %+v %v", in, err)
	}

	// Killing a job waiting at its checkpoint.
	other, err := svc.Start(ctx, "approval", json.RawMessage(`{"order":"o-2"}`))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := jobapi.Await(ctx, svc, other, time.Minute); err != nil {
		t.Fatal(err)
	}
	if err := svc.Kill(ctx, other, "changed my mind"); err != nil {
		t.Fatal(err)
	}
	if out, err := jobapi.Await(ctx, svc, other, time.Minute); err != nil || out.Status.State != runtime.StateKilled {
		t.Fatalf("after kill: %+v %v", out, err)
	}

	// Errors mean the same on both sides.
	unknown, _ := runtime.NewJobID()
	for what, err := range map[string]error{
		"status":  func() error { _, err := svc.Status(ctx, unknown); return err }(),
		"inspect": func() error { _, err := svc.Inspect(ctx, unknown); return err }(),
		"waiting": func() error { _, err := svc.Waiting(ctx, unknown); return err }(),
		"pause":   svc.Pause(ctx, unknown),
		"resume":  svc.Resume(ctx, unknown),
		"kill":    svc.Kill(ctx, unknown, "x"),
		"signal":  func() error { _, err := svc.Signal(ctx, job, "ship", runtime.Decision{}); return err }(),
	} {
		if !errors.Is(err, store.ErrNotFound) {
			t.Errorf("%s of an unknown job: %v, want not found", what, err)
		}
	}
	if _, err := svc.Start(ctx, "nosuch", json.RawMessage(`{"order":"x"}`)); !errors.Is(err, runtime.ErrUnknownFlow) {
		t.Errorf("start of an unknown flow: %v", err)
	}
	if _, err := svc.Start(ctx, "approval@9.9.9", json.RawMessage(`{"order":"x"}`)); !errors.Is(err, runtime.ErrFlowVersionMissing) {
		t.Errorf("start of an unknown version: %v", err)
	}
	if _, err := svc.Jobs(ctx, runtime.JobQuery{State: "sleeping"}); !errors.Is(err, runtime.ErrBadQuery) {
		t.Errorf("bad query: %v", err)
	}
	if checksInput {
		var ie *flowir.InputError
		if _, err := svc.Start(ctx, "approval", json.RawMessage(`{}`)); !errors.As(err, &ie) || ie.Problems[0].Path != "$.order" {
			t.Errorf("bad input: %v", err)
		}
		if list, _ := svc.Jobs(ctx, runtime.JobQuery{}); len(list.Jobs) != 2 {
			t.Errorf("a refused input created a job: %+v", list)
		}
	}

	// A decision for every job whose input matches, waiting at approve.
	var batch []runtime.JobID
	for _, order := range []string{"o-7", "o-7", "o-8"} {
		job, err := svc.Start(ctx, "approval", json.RawMessage(`{"order":"`+order+`"}`))
		if err != nil {
			t.Fatal(err)
		}
		if out, err := jobapi.Await(ctx, svc, job, time.Minute); err != nil || len(out.Waiting) != 1 {
			t.Fatalf("await: %+v %v", out, err)
		}
		batch = append(batch, job)
	}
	resumed, jobs, err := jobapi.SignalAll(ctx, svc, runtime.JobQuery{Flow: "approval", Where: map[string]string{"order": "o-7"}}, "approve", runtime.Decision{Approved: true, By: "ops"})
	if err != nil || resumed != 2 || jobs != 2 {
		t.Fatalf("signal all o-7: %d resumed in %d jobs, %v", resumed, jobs, err)
	}
	for i, job := range batch {
		out, err := jobapi.Await(ctx, svc, job, time.Minute)
		if err != nil || out.Finished != (i < 2) {
			t.Errorf("job %d after signalling o-7: %+v %v", i, out, err)
		}
	}
	if err := svc.Kill(ctx, batch[2], "done testing"); err != nil {
		t.Fatal(err)
	}

	// A job key starts one job, whoever asks again.
	keyed, created, err := svc.StartOnce(ctx, "approval", "order-o-3", json.RawMessage(`{"order":"o-3"}`))
	if err != nil || !created {
		t.Fatalf("first start under a key: %s %v %v", keyed, created, err)
	}
	again, created, err := svc.StartOnce(ctx, "approval", "order-o-3", json.RawMessage(`{"order":"o-3"}`))
	if err != nil || created || again != keyed {
		t.Fatalf("second start under the key: %s %v %v, want %s, not created", again, created, err, keyed)
	}
	if list, _ := svc.Jobs(ctx, runtime.JobQuery{Where: map[string]string{"order": "o-3"}}); len(list.Jobs) != 1 {
		t.Errorf("two starts under one key made %d jobs", len(list.Jobs))
	}
	if _, _, err := svc.StartOnce(ctx, "approval-again", "order-o-3", json.RawMessage(`{"order":"o-3"}`)); !errors.Is(err, runtime.ErrKeyInUse) {
		t.Errorf("the key under another flow: %v, want ErrKeyInUse", err)
	}
}

// deadLetterConformance plants a message no worker can decode, which the
// workers dead-letter, and operates the dead stream.
func deadLetterConformance(t *testing.T, svc jobapi.Service, s store.Store) {
	ctx := context.Background()
	job, _ := runtime.NewJobID()
	err := s.Update(ctx, func(tx store.Tx) error {
		return tx.Enqueue(store.Message{ID: [16]byte{7}, Stream: engine.WorkStream, Job: job[:], Payload: []byte{0xff}})
	})
	if err != nil {
		t.Fatal(err)
	}
	dead := awaitDeadLetter(t, svc)
	if dead.Job != job || dead.ID != ([16]byte{7}) || dead.Reason == "" || dead.At.IsZero() {
		t.Fatalf("dead letter %+v", dead)
	}
	if _, err := svc.FailDeadLetter(ctx, dead.ID, "no"); !errors.Is(err, runtime.ErrUndecodable) {
		t.Errorf("fail an undecodable dead letter: %v, want ErrUndecodable", err)
	}
	next, err := svc.RequeueDeadLetter(ctx, dead.ID)
	if err != nil {
		t.Fatal(err)
	}
	if again, err := svc.RequeueDeadLetter(ctx, dead.ID); err != nil || again != next {
		t.Errorf("requeue again: %s %v, want %s", again, err, next)
	}
	if _, err := svc.FailDeadLetter(ctx, dead.ID, "no"); !errors.Is(err, runtime.ErrDeadLetterTaken) {
		t.Errorf("fail a requeued dead letter: %v, want ErrDeadLetterTaken", err)
	}
	if _, err := svc.RequeueDeadLetter(ctx, runtime.MessageID{1}); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("requeue of no dead letter: %v, want not found", err)
	}
	if back := awaitDeadLetter(t, svc); back.ID != next { // it still does not decode
		t.Errorf("requeued message dead again as %s, want %s", back.ID, next)
	}
}

// awaitDeadLetter waits until the workers dead-lettered one message.
func awaitDeadLetter(t *testing.T, svc jobapi.Service) runtime.DeadLetter {
	t.Helper()
	for range 500 {
		dead, err := svc.DeadLetters(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if len(dead) == 1 {
			return dead[0]
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatal("no dead letter after 5 s")
	return runtime.DeadLetter{}
}

// TestAPINeedsTheToken: without the endpoint file's token, nothing but
// health answers.
func TestAPINeedsTheToken(t *testing.T) {
	t.Parallel()
	e, path, _ := rig(t)
	c := serve(t, e, path)
	for _, token := range []string{"", "wrong", c.Endpoint.Token + "x"} {
		req, _ := http.NewRequest("GET", "http://"+c.Endpoint.Addr+"/v1/jobs", nil)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("token %q: %d", token, resp.StatusCode)
		}
	}
	fi, err := os.Stat(jobapi.EndpointPath(path))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("endpoint file: %v %v", fi, err)
	}
}

// TestDiscoverIgnoresStaleEndpoints: an endpoint file whose server is gone
// means no server.
func TestDiscoverIgnoresStaleEndpoints(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "flowgen.db")
	if _, err := jobapi.Discover(context.Background(), path); !errors.Is(err, jobapi.ErrNoServer) {
		t.Fatalf("no file: %v", err)
	}
	raw, _ := json.Marshal(jobapi.Endpoint{Addr: "127.0.0.1:1", Token: "t", PID: 1, Store: path})
	if err := os.WriteFile(jobapi.EndpointPath(path), raw, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := jobapi.Discover(context.Background(), path); !errors.Is(err, jobapi.ErrNoServer) {
		t.Fatalf("stale file: %v", err)
	}
}

// TestStartCarriesTheCallersTrace: a client that starts a job inside a
// span sends its traceparent, and the job's trace goes on under it.
func TestStartCarriesTheCallersTrace(t *testing.T) {
	t.Parallel()
	spans := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans))
	defer tp.Shutdown(context.Background())
	path := filepath.Join(t.TempDir(), "jobs.db")
	s, err := boltstore.Open(path, boltstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	e := engine.New(s, engine.Options{Owner: "test", Tracing: oteltraces.New(tp)})
	if err := e.Register(approvalFlow()); err != nil {
		t.Fatal(err)
	}
	c := serve(t, e, path)
	ctx, caller := tp.Tracer("caller").Start(context.Background(), "caller")
	if _, _, err := c.StartOnce(ctx, "approval", "", json.RawMessage(`{"order":"o-1"}`)); err != nil {
		t.Fatal(err)
	}
	caller.End()
	for _, sp := range spans.Ended() {
		if sp.Name() == "flowgen.job approval" {
			if sp.Parent().SpanID() != caller.SpanContext().SpanID() || sp.SpanContext().TraceID() != caller.SpanContext().TraceID() {
				t.Fatalf("the job's start span is under %v, not the caller's span %v", sp.Parent(), caller.SpanContext())
			}
			return
		}
	}
	t.Fatalf("no span of the job's start among %d", len(spans.Ended()))
}
