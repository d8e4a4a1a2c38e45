package oteltraces

import (
	"context"
	"testing"

	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// TestTraceparentIsTheStandardOne: the traceparent kept in a job's meta is
// what the W3C propagator writes, and reads back to the same context.
func TestTraceparentIsTheStandardOne(t *testing.T) {
	for _, flags := range []trace.TraceFlags{0, trace.FlagsSampled} {
		sc := trace.NewSpanContext(trace.SpanContextConfig{
			TraceID: trace.TraceID{0x4b, 0xf9, 0x2f, 0x35, 0x77, 0xb3, 0x4d, 0xa6, 0xa3, 0xce, 0x92, 0x9d, 0x0e, 0x0e, 0x47, 0x36},
			SpanID:  trace.SpanID{0x00, 0xf0, 0x67, 0xaa, 0x0b, 0xa9, 0x02, 0xb7}, TraceFlags: flags,
		})
		carrier := propagation.MapCarrier{}
		propagator.Inject(trace.ContextWithSpanContext(context.Background(), sc), carrier)
		if got, want := Traceparent(sc), carrier.Get("traceparent"); got != want {
			t.Errorf("traceparent %q, the propagator writes %q", got, want)
		}
		if back := SpanContextOf(Traceparent(sc)); !back.Equal(sc.WithRemote(true)) {
			t.Errorf("read back %v, want %v", back, sc)
		}
	}
	if Traceparent(trace.SpanContext{}) != "" {
		t.Error("an invalid span context has a traceparent")
	}
}
