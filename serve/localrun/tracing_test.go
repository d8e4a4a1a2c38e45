package localrun

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
)

// TestTracesGoToTheOTLPEndpointTheEnvironmentNames: with
// OTEL_EXPORTER_OTLP_ENDPOINT set, spans are exported over OTLP/HTTP to it
// (flushed at shutdown); without it, or with OTEL_SDK_DISABLED, tracing is
// off.
func TestTracesGoToTheOTLPEndpointTheEnvironmentNames(t *testing.T) {
	t.Parallel()
	got := make(chan string, 4)
	collector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if len(body) > 0 {
			got <- r.Method + " " + r.URL.Path
		}
		w.Header().Set("Content-Type", "application/x-protobuf")
	}))
	defer collector.Close()
	env := func(vars map[string]string) Process {
		return Process{LookupEnv: func(k string) (string, bool) { v, ok := vars[k]; return v, ok }}
	}
	for _, off := range []map[string]string{{}, {"OTEL_EXPORTER_OTLP_ENDPOINT": collector.URL, "OTEL_SDK_DISABLED": "true"}, {"OTEL_TRACES_EXPORTER": "none", "OTEL_EXPORTER_OTLP_ENDPOINT": collector.URL}} {
		tp, stop, err := tracerFromEnv(context.Background(), env(off))
		if err != nil || tp != nil {
			t.Errorf("%v: tracing on (%v)", off, err)
		}
		stop()
	}
	tp, stop, err := tracerFromEnv(context.Background(), env(map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": collector.URL}))
	if err != nil || tp == nil {
		t.Fatalf("tracing off with an endpoint: %v", err)
	}
	_, span := tp.Tracer("test").Start(context.Background(), "one")
	span.End()
	stop()
	select {
	case req := <-got:
		if req != "POST /v1/traces" {
			t.Errorf("the collector got %s", req)
		}
	default:
		t.Fatal("no span reached the collector")
	}
}
