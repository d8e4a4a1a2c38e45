package registry_test

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"

	"github.com/flowgen-dev/flowgen/artifact"
	"github.com/flowgen-dev/flowgen/certify"
	"github.com/flowgen-dev/flowgen/registry/meta"
)

// benchHarness is a registry on PostgreSQL and MinIO for benchmarks.
func benchHarness(b *testing.B, certify bool) *harness {
	o := realStores(b)
	o.certify = certify
	return newHarness(b, o)
}

// certifiedBlob publishes a crafted artifact of about size bytes and marks
// it certified; it returns the version path and the zip's digest.
func certifiedBlob(b *testing.B, h *harness, size int) (string, string) {
	payload := make([]byte, size)
	rand.Read(payload)
	a := craft(b, "payments.charge", "1.0.0", append(validFiles("bench"), entry{name: "payload.bin", data: payload})...)
	if code, body := h.publish(h.publisher, "payments", a); code != http.StatusAccepted {
		b.Fatalf("publish: %d %s", code, body)
	}
	k := meta.Key{Namespace: "payments", Connector: "payments.charge", Version: "1.0.0"}
	if _, err := h.meta.UpdateVersion(context.Background(), k, func(v *meta.Version) error { v.State = meta.Certified; return nil }); err != nil {
		b.Fatal(err)
	}
	return versionPath("payments", "payments.charge", "1.0.0"), a.Manifest.Digest
}

// BenchmarkPullThroughput: artifact downloads through registryd (which
// reads the blob from MinIO and checks its digest before serving) against
// a direct minio-go GET of the same object, in the same run.
func BenchmarkPullThroughput(b *testing.B) {
	const size = 8 << 20
	h := benchHarness(b, false)
	path, digest := certifiedBlob(b, h, size)
	objectKey := "registry/blobs/sha256/" + strings.TrimPrefix(digest, "sha256:")
	ctx := context.Background()
	var viaRegistry, direct time.Duration
	b.SetBytes(size)
	b.ResetTimer()
	for range b.N {
		start := time.Now()
		req, _ := http.NewRequest("GET", h.url+path+"/files/artifact.zip", nil)
		req.Header.Set("Authorization", "Bearer "+h.puller)
		resp, err := http.DefaultClient.Do(req)
		if err != nil || resp.StatusCode != 200 {
			b.Fatalf("pull: %v %v", err, resp)
		}
		n, _ := io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		viaRegistry += time.Since(start)

		start = time.Now()
		obj, err := h.s3.GetObject(ctx, h.bucket, objectKey, minio.GetObjectOptions{})
		if err != nil {
			b.Fatal(err)
		}
		m, _ := io.Copy(io.Discard, obj)
		obj.Close()
		direct += time.Since(start)
		if n < size || m != n {
			b.Fatalf("read %d via registry, %d direct", n, m)
		}
	}
	mb := float64(size) * float64(b.N) / (1 << 20)
	b.ReportMetric(mb/viaRegistry.Seconds(), "registry-MiB/s")
	b.ReportMetric(mb/direct.Seconds(), "minio-direct-MiB/s")
	b.ReportMetric(direct.Seconds()/viaRegistry.Seconds(), "registry/direct")
}

// BenchmarkPublishLatency: one example connector from upload to certified,
// split into upload (the PUT), certification (certify.Run, from the
// report) and the rest (storing evidence and metadata, noticing the end).
func BenchmarkPublishLatency(b *testing.B) {
	a, err := artifact.Build("../examples/connectors/charge", artifact.Options{})
	if err != nil {
		b.Fatal(err)
	}
	var upload, certifying, total time.Duration
	for range b.N {
		b.StopTimer()
		h := benchHarness(b, true)
		b.StartTimer()
		start := time.Now()
		if code, body := h.publish(h.publisher, "payments", a); code != http.StatusAccepted {
			b.Fatalf("publish: %d %s", code, body)
		}
		upload += time.Since(start)
		v := h.waitFor("payments", "payments.charge", "2.1.0")
		total += time.Since(start)
		if v.State != meta.Certified {
			b.Fatalf("%s: %s", v.State, v.Reason)
		}
		_, data := h.do("GET", versionPath("payments", "payments.charge", "2.1.0")+"/files/report.json", h.puller, "", nil)
		var r certify.Report
		json.Unmarshal(data, &r)
		certifying += r.Finished.Sub(r.Started)
	}
	n := float64(b.N)
	b.ReportMetric(upload.Seconds()*1000/n, "upload-ms")
	b.ReportMetric(certifying.Seconds()*1000/n, "certify-ms")
	b.ReportMetric((total-upload-certifying).Seconds()*1000/n, "store-ms")
	b.ReportMetric(total.Seconds()*1000/n, "total-ms")
}

// BenchmarkMetadataReads: version metadata GETs (token check and version
// read on PostgreSQL) from 64 concurrent clients, against /healthz (no
// storage) with the same clients in the same run.
func BenchmarkMetadataReads(b *testing.B) {
	h := benchHarness(b, false)
	path, _ := certifiedBlob(b, h, 1<<10)
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	b.ResetTimer()
	reads := concurrentGets(b, client, h.url+path, h.puller)
	health := concurrentGets(b, client, h.url+"/healthz", "")
	b.ReportMetric(reads, "req/s")
	b.ReportMetric(health, "healthz-req/s")
	b.ReportMetric(reads/health, "reads/healthz")
}

// concurrentGets makes b.N GETs from 64 goroutines and returns requests/s.
func concurrentGets(b *testing.B, client *http.Client, url, token string) float64 {
	var next atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	for range 64 {
		wg.Go(func() {
			for next.Add(1) <= int64(b.N) {
				req, _ := http.NewRequest("GET", url, nil)
				if token != "" {
					req.Header.Set("Authorization", "Bearer "+token)
				}
				resp, err := client.Do(req)
				if err != nil {
					b.Error(err)
					return
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != 200 {
					b.Errorf("status %d", resp.StatusCode)
					return
				}
			}
		})
	}
	wg.Wait()
	return float64(b.N) / time.Since(start).Seconds()
}
