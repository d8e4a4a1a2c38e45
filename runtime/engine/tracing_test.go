package engine

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/flowgen-dev/flowgen/runtime"
	"github.com/flowgen-dev/flowgen/telemetry/oteltraces"
	"github.com/flowgen-dev/flowgen/telemetry/prommetrics"
)

// TestOneTraceAcrossRetriesSubflowsAndRestarts: a job started under a
// caller's span runs a node that fails once and is retried, a subflow and
// a last node, with the worker replaced half-way (a restart: only the
// store survives). Every span is in the caller's trace: the job's start
// under the caller's span, each activation attempt under the job's start,
// the child job's activations under the parent's subflow activation, and
// the new worker's spans too. Both stores.
func TestOneTraceAcrossRetriesSubflowsAndRestarts(t *testing.T) {
	onEachBackend(t, func(t *testing.T, b backend, r *rig) {
		ctx := context.Background()
		spans := tracetest.NewSpanRecorder()
		tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans))
		defer tp.Shutdown(ctx)
		var calls atomic.Int64
		flaky := runtime.Typed(runtime.NodeInfo{ID: "t.flaky", RetryOwner: runtime.RetryOrchestrator, Retry: runtime.RetryPolicy{InitialInterval: time.Second, BackoffCoefficient: 2, MaxAttempts: 3}},
			func(_ *runtime.Context, _ noParams, in json.RawMessage) (json.RawMessage, error) {
				if calls.Add(1) == 1 {
					return nil, runtime.Errorf(runtime.Transient, "try again")
				}
				return in, nil
			})
		echo := runtime.Typed(runtime.NodeInfo{ID: "t.echo"}, func(_ *runtime.Context, _ noParams, in json.RawMessage) (json.RawMessage, error) { return in, nil })
		inner := &runtime.Flow{Name: "inner", Nodes: []*runtime.FlowNode{{Alias: "x", Runner: echo}, {Alias: "y", Runner: echo}},
			Edges: []runtime.Edge{{From: "x", FromPort: "out", To: "y"}}}
		outer := &runtime.Flow{Name: "traced",
			Nodes: []*runtime.FlowNode{
				{Alias: "flaky", Runner: flaky},
				{Alias: "sub", Subflow: &runtime.Subflow{Flow: "inner", Inputs: []string{"x"}}},
				{Alias: "last", Runner: echo},
			},
			Edges: []runtime.Edge{{From: "flaky", FromPort: "out", To: "sub"}, {From: "sub", FromPort: "out", To: "last"}}}
		takeovers := prometheus.NewRegistry()
		worker := func(owner string) *Engine {
			opts := Options{Owner: owner, Now: r.clock.Now, Tracing: oteltraces.New(tp)}
			if owner == "second" {
				opts.Metrics = prommetrics.New(takeovers, r.store)
			}
			e := New(r.store, opts)
			for _, f := range []*runtime.Flow{inner, outer} {
				if err := e.Register(f); err != nil {
					t.Fatal(err)
				}
			}
			return e
		}
		callerCtx, caller := tp.Tracer("caller").Start(ctx, "caller")
		first := worker("first")
		job, err := first.Start(callerCtx, "traced", json.RawMessage(`{"n":1}`))
		caller.End()
		if err != nil {
			t.Fatal(err)
		}
		if err := drain(t, first); err != nil { // flaky fails once: its retry waits a second
			t.Fatal(err)
		}
		r.reopen()                        // the first worker is gone
		r.clock.Advance(31 * time.Second) // the retry is due, the first worker's lease expired
		second := worker("second")
		if err := drain(t, second); err != nil {
			t.Fatal(err)
		}
		if st, err := second.Status(ctx, job); err != nil || st.State != runtime.StateSucceeded {
			t.Fatalf("job %+v %v", st, err)
		}
		// The second worker took the job's lease the first left behind.
		if n := metricValue(t, takeovers, "flowgen_lease_takeovers_total", nil); n != 1 {
			t.Errorf("the second worker counted %v lease takeovers, want 1", n)
		}

		ended := spans.Ended()
		byID := map[trace.SpanID]sdktrace.ReadOnlySpan{}
		named := map[string][]sdktrace.ReadOnlySpan{}
		for _, s := range ended {
			byID[s.SpanContext().SpanID()] = s
			named[s.Name()] = append(named[s.Name()], s)
			if s.SpanContext().TraceID() != caller.SpanContext().TraceID() {
				t.Errorf("span %s is in trace %s, not the caller's %s", s.Name(), s.SpanContext().TraceID(), caller.SpanContext().TraceID())
			}
		}
		parentName := func(s sdktrace.ReadOnlySpan) string {
			if p, ok := byID[s.Parent().SpanID()]; ok {
				return p.Name()
			}
			return "?"
		}
		jobs := named["flowgen.job traced"]
		if len(jobs) != 1 || parentName(jobs[0]) != "caller" {
			t.Fatalf("the job's start span: %d, under %v", len(jobs), jobs)
		}
		if n := len(named["flowgen.activation flaky"]); n != 2 {
			t.Errorf("flaky has %d attempt spans, want 2 (a failure, a retry)", n)
		}
		// The attempt that failed and was retried says so; the one that
		// succeeded has status Ok.
		outcomes := map[string]bool{}
		for _, s := range named["flowgen.activation flaky"] {
			outcome := ""
			for _, a := range s.Attributes() {
				if a.Key == "flowgen.outcome" {
					outcome = a.Value.AsString()
				}
			}
			if s.Status().Code == codes.Ok {
				outcome += "ok"
			}
			outcomes[outcome] = true
		}
		if !outcomes["retrying"] || !outcomes["ok"] || len(outcomes) != 2 {
			t.Errorf("flaky's attempts ended %v, want one retrying and one Ok", outcomes)
		}
		for _, name := range []string{"flowgen.activation flaky", "flowgen.activation sub", "flowgen.activation last"} {
			if len(named[name]) == 0 {
				t.Errorf("no span %s", name)
			}
			for _, s := range named[name] {
				if parentName(s) != "flowgen.job traced" {
					t.Errorf("%s is under %s, not the job's start", name, parentName(s))
				}
			}
		}
		for _, name := range []string{"flowgen.activation x", "flowgen.activation y"} {
			if len(named[name]) != 1 || parentName(named[name][0]) != "flowgen.activation sub" {
				t.Errorf("the child job's %s: %d spans, under %s, want one under the parent's subflow activation", name, len(named[name]), parentName(named[name][0]))
			}
		}
		// Both workers' spans are in it: the second went on with the trace
		// the job keeps in the store.
		workers := map[string]int{}
		for _, s := range ended {
			for _, a := range s.Attributes() {
				if a.Key == "flowgen.worker" {
					workers[a.Value.AsString()]++
				}
			}
		}
		if workers["first"] == 0 || workers["second"] == 0 {
			t.Errorf("activation spans by worker %v, want some of each", workers)
		}
		// Every activation span names its activation's kind.
		kinds := map[string]int{}
		for _, s := range ended {
			for _, a := range s.Attributes() {
				if a.Key == "flowgen.kind" {
					kinds[a.Value.AsString()]++
				}
			}
		}
		if kinds["entry"] == 0 || kinds["step"] == 0 || len(kinds) != 2 {
			t.Errorf("activation spans by kind %v, want entries and steps", kinds)
		}
	})
}

// TestHTTPCallsAreClientSpansWithTraceparent: a node's HTTP call, with the
// capability granted the engine's tracer provider, is a client span under
// the activation's, and the server receives the call's traceparent in the
// job's trace.
func TestHTTPCallsAreClientSpansWithTraceparent(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	spans := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans))
	defer tp.Shutdown(ctx)
	got := make(chan string, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got <- r.Header.Get("traceparent")
		w.Write([]byte(`{}`))
	}))
	defer srv.Close()
	target, _ := url.Parse(srv.URL)
	fetch := runtime.Typed(runtime.NodeInfo{ID: "t.fetch", Effects: runtime.ReadOnly, Capabilities: []string{"http.read"}, Egress: []string{"stock.example.com"}},
		func(c *runtime.Context, _ noParams, in json.RawMessage) (json.RawMessage, error) {
			if _, err := c.Caps().HTTPRead.Get(c, "http://stock.example.com/stock", nil); err != nil {
				return nil, err
			}
			return in, nil
		})
	r := newRig(t)
	routes := &ConnectTo{Routes: []ConnectRoute{{Host: "stock.example.com", Target: target}}}
	e := New(r.store, Options{Tracing: oteltraces.New(tp), Capabilities: Grants{Store: r.store, Transport: oteltraces.Transport(routes, tp)}.For})
	if err := e.Register(&runtime.Flow{Name: "fetching", Nodes: []*runtime.FlowNode{{Alias: "fetch", Runner: fetch}}}); err != nil {
		t.Fatal(err)
	}
	job, err := e.Start(ctx, "fetching", json.RawMessage(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	if err := drain(t, e); err != nil {
		t.Fatal(err)
	}
	if st, err := e.Status(ctx, job); err != nil || st.State != runtime.StateSucceeded {
		t.Fatalf("job %+v %v", st, err)
	}
	header := <-got
	var activation, client sdktrace.ReadOnlySpan
	for _, s := range spans.Ended() {
		switch {
		case s.Name() == "flowgen.activation fetch":
			activation = s
		case s.SpanKind() == trace.SpanKindClient:
			client = s
		}
	}
	if activation == nil || client == nil {
		t.Fatalf("spans %v: want the activation's and an HTTP client span", spans.Ended())
	}
	if client.Parent().SpanID() != activation.SpanContext().SpanID() {
		t.Errorf("the HTTP span is not under the activation's")
	}
	want := "00-" + client.SpanContext().TraceID().String() + "-" + client.SpanContext().SpanID().String() + "-01"
	if header != want {
		t.Errorf("the server got traceparent %q, want the client span's %q", header, want)
	}
	var method bool
	for _, a := range client.Attributes() {
		method = method || (a.Key == "http.request.method" && a.Value.AsString() == "GET")
	}
	if !method {
		t.Errorf("the client span lacks http.request.method GET: %v", client.Attributes())
	}
}
