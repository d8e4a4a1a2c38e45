package engine

import (
	"context"
	"encoding/hex"
	"sync"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/flowgen-dev/flowgen/runtime/runtype"
	"github.com/flowgen-dev/flowgen/runtime/store"
)

// Traces. A job's trace outlives any one process: starting a job opens
// and ends a span of its own (flowgen.job), whose context the job's meta
// keeps as a W3C traceparent, and every activation attempt, on whichever
// worker, after any restart, is a span (flowgen.activation) under it. A
// subflow's child job is started under the span of the parent's subflow
// activation, so one trace holds the whole tree. Spans carry ids, names,
// attempts and failure kinds, never inputs or outputs, so no secret or
// pii-classed value reaches them.

// tracing is the engine's tracer and a cache of job trace contexts.
type tracing struct {
	tracer trace.Tracer
	on     bool
	store  store.Store
	owner  string // the worker, an attribute of its spans
	// jobs caches each job's trace context (runtype.JobID ->
	// trace.SpanContext), which never changes; it is cleared when it
	// holds maxTracedJobs.
	mu   sync.Mutex
	jobs map[runtype.JobID]trace.SpanContext
}

// maxTracedJobs bounds the cache of job trace contexts.
const maxTracedJobs = 10_000

// propagator reads and writes traceparent.
var propagator = propagation.TraceContext{}

func newTracing(tp trace.TracerProvider, s store.Store, owner string) *tracing {
	if tp == nil {
		return &tracing{tracer: noop.NewTracerProvider().Tracer("")}
	}
	return &tracing{tracer: tp.Tracer("github.com/flowgen-dev/flowgen/runtime"), on: true, store: s, owner: owner, jobs: map[runtype.JobID]trace.SpanContext{}}
}

// traceparent encodes sc as a W3C traceparent ("" when invalid), as
// propagation.TraceContext writes it, without its carrier map.
func traceparent(sc trace.SpanContext) string {
	if !sc.IsValid() {
		return ""
	}
	tid, sid := sc.TraceID(), sc.SpanID()
	b := make([]byte, 0, 55)
	b = append(b, "00-"...)
	b = hex.AppendEncode(b, tid[:])
	b = append(b, '-')
	b = hex.AppendEncode(b, sid[:])
	b = append(b, '-')
	b = hex.AppendEncode(b, []byte{byte(sc.TraceFlags() & trace.FlagsSampled)})
	return string(b)
}

// spanContextOf decodes a traceparent.
func spanContextOf(tp string) trace.SpanContext {
	if tp == "" {
		return trace.SpanContext{}
	}
	ctx := propagator.Extract(context.Background(), propagation.MapCarrier{"traceparent": tp})
	return trace.SpanContextFromContext(ctx)
}

// startJob opens the span of a job being started, under ctx's span if
// any, and returns the traceparent to keep in its meta and the function
// that ends the span once the start committed or failed. With tracing off
// it returns "" and does nothing.
func (tr *tracing) startJob(ctx context.Context, flow string, job runtype.JobID) (string, func(error)) {
	if !tr.on {
		return "", func(error) {}
	}
	_, span := tr.tracer.Start(ctx, "flowgen.job "+flowName(flow), trace.WithSpanKind(trace.SpanKindProducer),
		trace.WithAttributes(attribute.String("flowgen.flow", flowName(flow)), attribute.String("flowgen.job", job.String())))
	tr.remember(job, span.SpanContext())
	return traceparent(span.SpanContext()), func(err error) {
		if err != nil {
			span.SetStatus(codes.Error, err.Error())
		}
		span.End()
	}
}

func (tr *tracing) remember(job runtype.JobID, sc trace.SpanContext) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	if len(tr.jobs) >= maxTracedJobs {
		clear(tr.jobs)
	}
	tr.jobs[job] = sc
}

// jobContext is the span context of job's start, from the cache or the
// job's meta; invalid when the job has none (started untraced).
func (tr *tracing) jobContext(ctx context.Context, job runtype.JobID) trace.SpanContext {
	tr.mu.Lock()
	sc, ok := tr.jobs[job]
	tr.mu.Unlock()
	if ok {
		return sc
	}
	var meta struct {
		Trace string `json:"trace"`
	}
	if found, err := lookupJSON(ctx, tr.store, metaKey(job), &meta); err != nil || !found {
		return trace.SpanContext{}
	}
	sc = spanContextOf(meta.Trace)
	tr.remember(job, sc)
	return sc
}

// activation opens the span of one attempt of en's activation, under its
// job's span, and returns ctx carrying it (node code's HTTP calls become
// its children) and the function that ends it with the attempt's outcome.
func (tr *tracing) activation(ctx context.Context, en *entry) (context.Context, func(result, error)) {
	if !tr.on {
		return ctx, func(result, error) {}
	}
	parent := tr.jobContext(ctx, en.job)
	if parent.IsValid() {
		ctx = trace.ContextWithRemoteSpanContext(ctx, parent)
	}
	t := en.t
	ctx, span := tr.tracer.Start(ctx, "flowgen.activation "+t.Node, trace.WithSpanKind(trace.SpanKindConsumer),
		trace.WithAttributes(
			attribute.String("flowgen.flow", flowName(t.Flow)),
			attribute.String("flowgen.node", t.Node),
			attribute.String("flowgen.activation", t.Act),
			attribute.String("flowgen.kind", string(t.Kind)),
			attribute.String("flowgen.job", en.job.String()),
			attribute.Int("flowgen.attempt", en.m.Attempt),
			attribute.String("flowgen.worker", tr.owner),
		))
	en.span = span.SpanContext()
	return ctx, func(res result, err error) {
		switch {
		case err != nil:
			span.SetAttributes(attribute.String("flowgen.outcome", outcomeOf(err)))
		case res.failed():
			span.SetAttributes(attribute.String("flowgen.outcome", "failed"), attribute.String("flowgen.error_kind", string(res.ErrKind)))
			span.SetStatus(codes.Error, string(res.ErrKind))
		default:
			// Status Ok says succeeded without growing the span's
			// attributes: most attempts succeed, and an attribute set at
			// the end copies all of them.
			span.SetStatus(codes.Ok, "")
		}
		span.End()
	}
}

// outcomeOf names how an attempt that returned no result ended.
func outcomeOf(err error) string {
	switch err {
	case errRetryLater:
		return "retrying"
	case errParked, errStartChild, errSleeping:
		return "parked"
	}
	return "interrupted"
}
