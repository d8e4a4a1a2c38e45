package registry

import (
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// metrics are the registry's Prometheus metrics, on a registry of their
// own so that several Servers (tests) do not collide.
type metrics struct {
	reg             *prometheus.Registry
	requests        *prometheus.CounterVec
	latency         *prometheus.HistogramVec
	publishes       *prometheus.CounterVec
	certifications  *prometheus.CounterVec
	certifyDuration prometheus.Histogram
	queue           prometheus.Gauge
	tampered        prometheus.Counter
	webhooks        *prometheus.CounterVec
}

func newMetrics() *metrics {
	m := &metrics{
		reg: prometheus.NewRegistry(),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "registry_http_requests_total", Help: "HTTP requests by route and status code.",
		}, []string{"route", "code"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "registry_http_request_duration_seconds", Help: "HTTP request latency by route.",
			Buckets: prometheus.ExponentialBuckets(0.001, 4, 9),
		}, []string{"route"}),
		publishes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "registry_publishes_total", Help: "Publish requests by outcome (ok, rejected, error).",
		}, []string{"outcome"}),
		certifications: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "registry_certifications_total", Help: "Finished certifications by resulting state.",
		}, []string{"state"}),
		certifyDuration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "registry_certification_duration_seconds", Help: "Time to certify one version.",
			Buckets: prometheus.ExponentialBuckets(1, 2, 10),
		}),
		queue: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "registry_certification_queue", Help: "Versions waiting for certification.",
		}),
		tampered: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "registry_tampered_blobs_total", Help: "Stored blobs found not to match their digest.",
		}),
		webhooks: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "registry_webhook_deliveries_total", Help: "Webhook delivery attempts by target and outcome (delivered, failed).",
		}, []string{"webhook", "outcome"}),
	}
	m.reg.MustRegister(m.requests, m.latency, m.publishes, m.certifications, m.certifyDuration, m.queue, m.tampered, m.webhooks,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

func (m *metrics) observe(route string, status int, d time.Duration) {
	m.requests.WithLabelValues(route, strconv.Itoa(status)).Inc()
	m.latency.WithLabelValues(route).Observe(d.Seconds())
}

func (m *metrics) handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{})
}
