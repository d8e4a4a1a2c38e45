//go:build chaos

package registry_test

import (
	"bytes"
	"context"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"

	"github.com/flowgen-dev/flowgen/artifact"
	"github.com/flowgen-dev/flowgen/registry/meta"
	"github.com/flowgen-dev/flowgen/runtime/store/pgstore/pgtest"
)

// TestChaosPostgresRestart: with PostgreSQL stopped, a publish is a 503 that
// leaves no blob behind and readiness says why; PostgreSQL restarted while
// a version certifies neither exposes it half-done nor loses it: the
// certifier finishes it once the database is back.
func TestChaosPostgresRestart(t *testing.T) {
	t.Parallel()
	o := realStores(t)
	h := newHarness(t, o)
	t.Cleanup(func() { pgtest.Cluster(t, "start") })
	a, err := artifact.Build("../examples/connectors/normalize", artifact.Options{})
	if err != nil {
		t.Fatal(err)
	}
	k := meta.Key{Namespace: "orders", Connector: a.Manifest.Connector, Version: a.Manifest.ConnectorVersion}
	path := versionPath(k.Namespace, k.Connector, k.Version)

	// Down during publish.
	objectsBefore := bucketObjects(t, h)
	pgtest.Cluster(t, "stop")
	code, body := h.publish(h.orders, k.Namespace, a)
	if code != http.StatusServiceUnavailable || apiError(t, body).Code != "storage_unavailable" {
		t.Fatalf("publish with PostgreSQL down: %d %s", code, body)
	}
	if code, body := h.do("GET", "/readyz", "", "", nil); code != http.StatusServiceUnavailable || !strings.Contains(string(body), "metadata") {
		t.Errorf("readyz with PostgreSQL down: %d %s", code, body)
	}
	if after := bucketObjects(t, h); !slices.Equal(after, objectsBefore) {
		t.Errorf("the refused publish left objects behind: %v (before: %v)", after, objectsBefore)
	}
	pgtest.Cluster(t, "start")

	// Restarted mid-certification. The first requests after a restart may
	// meet connections the server closed; a client retries a 503.
	publishOnce := func() (int, []byte) {
		for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(200 * time.Millisecond) {
			code, body := h.publish(h.orders, k.Namespace, a)
			if code != http.StatusServiceUnavailable || time.Now().After(deadline) {
				return code, body
			}
		}
	}
	if code, body := publishOnce(); code != http.StatusAccepted {
		t.Fatalf("publish after PostgreSQL came back: %d %s", code, body)
	}
	h.startCertifier()
	for deadline := time.Now().Add(2 * time.Minute); ; time.Sleep(20 * time.Millisecond) {
		v, _ := h.meta.GetVersion(context.Background(), k)
		if v.State == meta.Certifying && strings.Contains(v.Progress, "static-analysis") {
			break
		}
		if time.Now().After(deadline) || v.State == meta.Certified {
			t.Fatalf("never caught it certifying: %s %s", v.State, v.Progress)
		}
	}
	// While the database goes away and comes back, the artifact is never
	// served: it is not certified yet.
	watching, served := make(chan struct{}), make(chan int, 1)
	go func() {
		defer close(served)
		for {
			select {
			case <-watching:
				return
			default:
			}
			if code, _ := h.do("GET", path+"/files/artifact.zip", h.puller, "", nil); code == http.StatusOK {
				v, _ := h.meta.GetVersion(context.Background(), k)
				if v.State != meta.Certified {
					served <- code
					return
				}
			}
			time.Sleep(50 * time.Millisecond)
		}
	}()
	pgtest.Cluster(t, "restart")
	v := h.waitFor(k.Namespace, k.Connector, k.Version)
	close(watching)
	if _, halfDone := <-served; halfDone {
		t.Fatal("the artifact was served before it was certified")
	}
	if v.State != meta.Certified {
		t.Fatalf("after the restart: %s %s", v.State, v.Reason)
	}
	code, zip := h.do("GET", path+"/files/artifact.zip", h.puller, "", nil)
	if code != http.StatusOK || !bytes.Equal(zip, a.Zip) {
		t.Fatalf("the certified artifact: %d, %d bytes (want %d)", code, len(zip), len(a.Zip))
	}
	if code, body := h.do("GET", "/readyz", "", "", nil); code != http.StatusOK {
		t.Errorf("readyz after the restart: %d %s", code, body)
	}
}

// bucketObjects lists the keys in the harness's bucket.
func bucketObjects(t *testing.T, h *harness) []string {
	t.Helper()
	var keys []string
	for o := range h.s3.ListObjects(context.Background(), h.bucket, minio.ListObjectsOptions{Recursive: true}) {
		if o.Err != nil {
			t.Fatal(o.Err)
		}
		keys = append(keys, o.Key)
	}
	return keys
}
