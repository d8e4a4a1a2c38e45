package engine

import (
	"context"
	"encoding/json"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/flowgen-dev/flowgen/runtime"
	"github.com/flowgen-dev/flowgen/telemetry/prommetrics"
)

// metricValue sums the samples of metric name in reg whose labels include
// want: counter and gauge values, and for a histogram its sample count.
func metricValue(t *testing.T, reg *prometheus.Registry, name string, want map[string]string) float64 {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var sum float64
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
	metrics:
		for _, m := range f.GetMetric() {
			have := map[string]string{}
			for _, l := range m.GetLabel() {
				have[l.GetName()] = l.GetValue()
			}
			for k, v := range want {
				if have[k] != v {
					continue metrics
				}
			}
			switch {
			case m.GetCounter() != nil:
				sum += m.GetCounter().GetValue()
			case m.GetGauge() != nil:
				sum += m.GetGauge().GetValue()
			case m.GetHistogram() != nil:
				sum += float64(m.GetHistogram().GetSampleCount())
			}
		}
	}
	return sum
}

// TestMetricsCountAKnownRun: after a linear job, a saga whose last step
// fails (two compensations), a sleep and a schedule tick, the engine's
// metrics count exactly what ran, and the queue gauges read the backlog
// from the store. Both stores.
func TestMetricsCountAKnownRun(t *testing.T) {
	onEachBackend(t, func(t *testing.T, b backend, r *rig) {
		ctx := context.Background()
		reg := prometheus.NewRegistry()
		e := New(r.store, Options{Owner: "w", Now: r.clock.Now, Metrics: prommetrics.New(reg, r.store)})
		for _, f := range []*runtime.Flow{linearFlow(), sagaFlow(r.sink, true), sleepFlow(runtime.Sleep{For: time.Minute})} {
			if err := e.Register(f); err != nil {
				t.Fatal(err)
			}
		}
		if err := e.AddSchedule(runtime.Schedule{Name: "minutely", Flow: "linear", Cron: "* * * * *", Input: json.RawMessage(`{"n":2}`)}); err != nil {
			t.Fatal(err)
		}
		if _, err := e.StartDue(ctx); err != nil { // the schedule's state
			t.Fatal(err)
		}
		for _, s := range []struct{ flow, input string }{{"linear", `{"n":1}`}, {"saga", sagaInput}, {"nap", `{"n":1}`}} {
			if _, err := e.Start(ctx, s.flow, json.RawMessage(s.input)); err != nil {
				t.Fatal(err)
			}
		}
		if err := drain(t, e); err != nil {
			t.Fatal(err)
		}
		r.clock.Advance(time.Minute) // the sleep wakes, the schedule ticks
		if n, err := e.StartDue(ctx); err != nil || n != 1 {
			t.Fatalf("schedule: %d %v", n, err)
		}
		if err := drain(t, e); err != nil {
			t.Fatal(err)
		}

		checks := []struct {
			name   string
			labels map[string]string
			want   float64
		}{
			{"flowgen_activations_started_total", map[string]string{"flow": "linear"}, 6},
			{"flowgen_activations_finished_total", map[string]string{"flow": "linear", "outcome": "succeeded"}, 6},
			{"flowgen_activations_finished_total", map[string]string{"flow": "saga", "node": "ship", "outcome": "failed", "kind": "Permanent"}, 1},
			{"flowgen_compensations_total", map[string]string{"flow": "saga", "outcome": "succeeded"}, 2},
			{"flowgen_job_duration_seconds", map[string]string{"flow": "linear", "state": "succeeded"}, 2},
			{"flowgen_job_duration_seconds", map[string]string{"flow": "saga", "state": "failed"}, 1},
			{"flowgen_activation_duration_seconds", map[string]string{"flow": "linear", "node": "b"}, 2},
			{"flowgen_timers_fired_total", map[string]string{"flow": "nap"}, 1},
			{"flowgen_schedule_ticks_total", map[string]string{"schedule": "minutely", "result": "started"}, 1},
			{"flowgen_fenced_commits_total", nil, 0},
			{"flowgen_queue_pending_messages", map[string]string{"stream": WorkStream}, 0},
		}
		for _, c := range checks {
			if got := metricValue(t, reg, c.name, c.labels); got != c.want {
				t.Errorf("%s%v = %v, want %v", c.name, c.labels, got, c.want)
			}
		}

		// A job started and not yet run is the backlog, a minute old.
		if _, err := e.Start(ctx, "linear", json.RawMessage(`{"n":3}`)); err != nil {
			t.Fatal(err)
		}
		r.clock.Advance(time.Minute)
		for name, want := range map[string]float64{"flowgen_queue_ready_messages": 1, "flowgen_queue_pending_messages": 1, "flowgen_queue_oldest_ready_age_seconds": 60} {
			if got := metricValue(t, reg, name, map[string]string{"stream": WorkStream}); got != want {
				t.Errorf("%s = %v, want %v", name, got, want)
			}
		}
	})
}

// describedNames are the metric names the collectors registered with reg
// describe.
type describingRegisterer struct {
	prometheus.Registerer
	names []string
}

var fqName = regexp.MustCompile(`fqName: "([a-z_]+)"`)

func (d *describingRegisterer) Register(c prometheus.Collector) error {
	ch := make(chan *prometheus.Desc, 16)
	go func() { c.Describe(ch); close(ch) }()
	for desc := range ch {
		if m := fqName.FindStringSubmatch(desc.String()); m != nil {
			d.names = append(d.names, m[1])
		}
	}
	return d.Registerer.Register(c)
}

// TestObservabilityDocsNameRealMetrics: docs/observability.md lists every
// metric the engine registers and no other, and the Grafana dashboard and
// the alert rules use only those.
func TestObservabilityDocsNameRealMetrics(t *testing.T) {
	t.Parallel()
	reg := &describingRegisterer{Registerer: prometheus.NewRegistry()}
	s := newRig(t).store
	New(s, Options{Metrics: prommetrics.New(reg, s)})
	slices.Sort(reg.names)
	doc, err := os.ReadFile("../../docs/observability.md")
	if err != nil {
		t.Fatal(err)
	}
	var table []string
	for _, m := range regexp.MustCompile("(?m)^\\| `(flowgen_[a-z_]+)` \\|").FindAllStringSubmatch(string(doc), -1) {
		table = append(table, m[1])
	}
	slices.Sort(table)
	if !slices.Equal(table, reg.names) {
		t.Errorf("docs/observability.md lists %v\nthe engine registers %v", table, reg.names)
	}
	for _, file := range []string{"../../docs/observability/grafana-dashboard.json", "../../docs/observability/alerts.yaml"} {
		raw, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		used := regexp.MustCompile(`flowgen_[a-z_]+`).FindAllString(string(raw), -1)
		if len(used) == 0 {
			t.Errorf("%s uses no flowgen metric", file)
		}
		for _, name := range used {
			base := strings.TrimSuffix(strings.TrimSuffix(strings.TrimSuffix(name, "_bucket"), "_count"), "_sum")
			if !slices.Contains(reg.names, base) {
				t.Errorf("%s uses %s, which the engine does not report", file, name)
			}
		}
	}
}
