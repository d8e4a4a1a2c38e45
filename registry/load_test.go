package registry_test

import (
	"fmt"
	"net"
	"net/http"
	"net/url"
	"slices"
	"sync"
	"testing"
	"time"
)

// loadResult is what a load run saw.
type loadResult struct {
	reads, errors      int
	stalled, publishes int
	p50, p99           time.Duration
	firstError         string
}

// runLoad: clients goroutines read metadata (search, a version, a listing)
// for d, while 20 clients keep opening uploads that declare a body and
// stall, and 4 real publishes (one token's cap) go through. Errors are any answer but the
// expected one.
func runLoad(tb testing.TB, h *harness, d time.Duration, clients int) loadResult {
	tb.Helper()
	u, _ := url.Parse(h.url)
	// Something to read: a published version.
	if code, body := h.publish(h.publisher, "payments", craft(tb, "payments.read", "1.0.0", validFiles("read")...)); code != http.StatusAccepted {
		tb.Fatalf("publish: %d %s", code, body)
	}
	reads := []string{"/v1/connectors?q=payments", versionPath("payments", "payments.read", "1.0.0"), "/v1/connectors/payments/payments.read/versions"}
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: clients}}
	defer client.CloseIdleConnections()

	var mu sync.Mutex
	var res loadResult
	var latencies []time.Duration
	fail := func(msg string) {
		mu.Lock()
		defer mu.Unlock()
		res.errors++
		if res.firstError == "" {
			res.firstError = msg
		}
	}
	deadline := time.Now().Add(d)
	var wg sync.WaitGroup
	for i := range clients {
		wg.Go(func() {
			var mine []time.Duration
			for n := i; time.Now().Before(deadline); n++ {
				req, _ := http.NewRequest("GET", h.url+reads[n%len(reads)], nil)
				req.Header.Set("Authorization", "Bearer "+h.publisher)
				start := time.Now()
				resp, err := client.Do(req)
				if err != nil {
					fail(err.Error())
					continue
				}
				resp.Body.Close()
				mine = append(mine, time.Since(start))
				if resp.StatusCode != http.StatusOK {
					fail(fmt.Sprintf("GET %s: %s", req.URL.Path, resp.Status))
				}
			}
			mu.Lock()
			latencies = append(latencies, mine...)
			mu.Unlock()
		})
	}
	for range 20 {
		wg.Go(func() {
			for time.Now().Before(deadline) {
				c, err := net.Dial("tcp", u.Host)
				if err != nil {
					fail(err.Error())
					continue
				}
				fmt.Fprintf(c, "PUT %s HTTP/1.1\r\nHost: %s\r\nContent-Length: 100000\r\n\r\nabcd", versionPath("payments", "payments.x", "1.0.0"), u.Host)
				buf := make([]byte, 12)
				c.SetReadDeadline(time.Now().Add(10 * time.Second))
				if _, err := c.Read(buf); err != nil || string(buf) != "HTTP/1.1 401" {
					fail(fmt.Sprintf("a stalled upload got %q %v", buf, err))
				}
				c.Close()
				mu.Lock()
				res.stalled++
				mu.Unlock()
			}
		})
	}
	for i := range 4 {
		wg.Go(func() {
			a := craft(tb, "payments.loaded", fmt.Sprintf("1.0.%d", i), validFiles(fmt.Sprint(i))...)
			if code, body := h.publish(h.publisher, "payments", a); code != http.StatusAccepted {
				fail(fmt.Sprintf("publish %d: %d %s", i, code, body))
				return
			}
			mu.Lock()
			res.publishes++
			mu.Unlock()
		})
	}
	wg.Wait()
	slices.Sort(latencies)
	res.reads = len(latencies)
	if n := len(latencies); n > 0 {
		res.p50, res.p99 = latencies[n/2], latencies[n*99/100]
	}
	return res
}

// TestLoad: 64 clients read metadata for 10 s while stalled uploads keep
// coming and real publishes go through: no errors, and descriptors back to
// where they were. The p99 is reported, not asserted (make bench measures
// it).
func TestLoad(t *testing.T) {
	h := newHarness(t, diskStores(t))
	h.do("GET", "/healthz", "", "", nil)
	http.DefaultClient.CloseIdleConnections()
	base := openFDs(t)
	res := runLoad(t, h, 10*time.Second, 64)
	t.Logf("%d reads (p50 %s, p99 %s), %d stalled uploads refused, %d publishes", res.reads, res.p50, res.p99, res.stalled, res.publishes)
	if res.errors > 0 || res.publishes != 4 || res.reads == 0 || res.stalled == 0 {
		t.Fatalf("%d errors, the first: %s (%d publishes)", res.errors, res.firstError, res.publishes)
	}
	waitFor(t, "descriptors back to the baseline", func() bool {
		http.DefaultClient.CloseIdleConnections()
		return openFDs(t) <= base
	})
}

// BenchmarkMetadataReadsUnderLoad reports the read latency of 64 clients
// while stalled uploads and publishes run, on PostgreSQL and MinIO.
func BenchmarkMetadataReadsUnderLoad(b *testing.B) {
	h := benchHarness(b, false)
	res := runLoad(b, h, 10*time.Second, 64)
	if res.errors > 0 {
		b.Fatalf("%d errors, the first: %s", res.errors, res.firstError)
	}
	b.ReportMetric(float64(res.reads)/10, "reads/s")
	b.ReportMetric(float64(res.p50.Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(res.p99.Microseconds())/1000, "p99-ms")
}
