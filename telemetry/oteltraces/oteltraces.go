// Package oteltraces exports the engine's spans (runtime/observe) through
// OpenTelemetry, and traces the HTTP requests of nodes under them.
package oteltraces

import (
	"context"
	"encoding/hex"
	"net/http"

	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/flowgen-dev/flowgen/runtime/observe"
)

// Tracer is observe.Tracer backed by an OpenTelemetry tracer provider. A
// job's trace outlives any one process: starting a job opens and ends a
// span of its own (flowgen.job), and every activation attempt, on
// whichever worker, after any restart, is a span (flowgen.activation)
// under it. Spans carry ids, names, attempts and failure kinds, never
// inputs or outputs, so no secret or pii-classed value reaches them.
type Tracer struct {
	tracer trace.Tracer
}

var _ observe.Tracer = Tracer{}

// New traces with tp.
func New(tp trace.TracerProvider) Tracer {
	return Tracer{tracer: tp.Tracer("github.com/flowgen-dev/flowgen/runtime")}
}

// propagator reads and writes traceparent.
var propagator = propagation.TraceContext{}

// StartJob implements observe.Tracer: a producer span under ctx's.
func (t Tracer) StartJob(ctx context.Context, job observe.JobSpan) (string, func(error)) {
	_, span := t.tracer.Start(ctx, "flowgen.job "+job.Flow, trace.WithSpanKind(trace.SpanKindProducer),
		trace.WithAttributes(attribute.String("flowgen.flow", job.Flow), attribute.String("flowgen.job", job.Job.String())))
	return Traceparent(span.SpanContext()), func(err error) {
		if err != nil {
			span.SetStatus(codes.Error, err.Error())
		}
		span.End()
	}
}

// StartActivation implements observe.Tracer: a consumer span under the
// job's, whose outcome is an attribute (a failure also the span's error
// status; success status Ok, without growing the span's attributes: most
// attempts succeed, and an attribute set at the end copies all of them).
func (t Tracer) StartActivation(ctx context.Context, parent string, a observe.ActivationSpan) (context.Context, string, func(observe.Outcome)) {
	if sc := SpanContextOf(parent); sc.IsValid() {
		ctx = trace.ContextWithRemoteSpanContext(ctx, sc)
	}
	ctx, span := t.tracer.Start(ctx, "flowgen.activation "+a.Node, trace.WithSpanKind(trace.SpanKindConsumer),
		trace.WithAttributes(
			attribute.String("flowgen.flow", a.Flow),
			attribute.String("flowgen.node", a.Node),
			attribute.String("flowgen.activation", a.Activation),
			attribute.String("flowgen.kind", a.Kind),
			attribute.String("flowgen.job", a.Job.String()),
			attribute.Int("flowgen.attempt", a.Attempt),
			attribute.String("flowgen.worker", a.Worker),
		))
	return ctx, Traceparent(span.SpanContext()), func(o observe.Outcome) {
		switch o.State {
		case "succeeded":
			span.SetStatus(codes.Ok, "")
		case "failed":
			span.SetAttributes(attribute.String("flowgen.outcome", "failed"), attribute.String("flowgen.error_kind", o.ErrorKind))
			span.SetStatus(codes.Error, o.ErrorKind)
		default:
			span.SetAttributes(attribute.String("flowgen.outcome", o.State))
		}
		span.End()
	}
}

// Transport wraps base so that every request is a client span (with the
// semantic-convention attributes of otelhttp) under the span of its
// context, the activation's for a node's request, and sends its W3C
// traceparent header.
func Transport(base http.RoundTripper, tp trace.TracerProvider) http.RoundTripper {
	return otelhttp.NewTransport(base, otelhttp.WithTracerProvider(tp), otelhttp.WithPropagators(propagator))
}

// Traceparent encodes sc as a W3C traceparent ("" when invalid), as
// propagation.TraceContext writes it, without its carrier map.
func Traceparent(sc trace.SpanContext) string {
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

// SpanContextOf decodes a traceparent; invalid when tp is "" or not one.
func SpanContextOf(tp string) trace.SpanContext {
	if tp == "" {
		return trace.SpanContext{}
	}
	ctx := propagator.Extract(context.Background(), propagation.MapCarrier{"traceparent": tp})
	return trace.SpanContextFromContext(ctx)
}
