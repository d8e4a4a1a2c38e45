package localrun

import (
	"context"
	"fmt"
	"strings"
	"time"

	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// tracerFromEnv returns the tracer provider the standard OpenTelemetry
// environment asks for, and its shutdown (which flushes what is
// buffered), or nil when tracing is off: it is on when
// OTEL_EXPORTER_OTLP_ENDPOINT or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT is set
// or OTEL_TRACES_EXPORTER is otlp, unless OTEL_SDK_DISABLED is true or
// OTEL_TRACES_EXPORTER is none. Spans go over OTLP/HTTP; the exporter reads
// the other OTEL_EXPORTER_OTLP_* variables (headers, TLS, timeout) and the
// resource OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES.
func tracerFromEnv(ctx context.Context, p Process) (*sdktrace.TracerProvider, func(), error) {
	exporter := p.getenv("OTEL_TRACES_EXPORTER")
	on := p.getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" || p.getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != "" || exporter == "otlp"
	if !on || p.getenv("OTEL_SDK_DISABLED") == "true" || exporter == "none" {
		return nil, func() {}, nil
	}
	// The endpoint as this process's environment says (the exporter reads
	// the rest from the OS environment, which is the same in a worker).
	var opts []otlptracehttp.Option
	if u := p.getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"); u != "" {
		opts = append(opts, otlptracehttp.WithEndpointURL(u))
	} else if u := p.getenv("OTEL_EXPORTER_OTLP_ENDPOINT"); u != "" {
		opts = append(opts, otlptracehttp.WithEndpointURL(strings.TrimSuffix(u, "/")+"/v1/traces"))
	}
	exp, err := otlptracehttp.New(ctx, opts...)
	if err != nil {
		return nil, nil, fmt.Errorf("OTLP trace exporter: %w", err)
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp))
	return tp, func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		tp.Shutdown(ctx)
	}, nil
}
