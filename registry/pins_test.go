package registry_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/flowgen-dev/flowgen/registry"
	"github.com/flowgen-dev/flowgen/registry/api"
	"github.com/flowgen-dev/flowgen/registry/blobstore"
	"github.com/flowgen-dev/flowgen/registry/meta"
)

// TestStalledUploadHoldsNothingAgainstGarbageCollection: an upload that
// stalls before the end of its body, with its artifact stored, does not
// hold garbage collection off, and garbage collection does not hold other
// uploads off; the stalled upload's blob survives a collection with no
// grace at all, and the upload, once it ends, commits a version whose
// blobs all exist. On both backends.
func TestStalledUploadHoldsNothingAgainstGarbageCollection(t *testing.T) {
	t.Parallel()
	for name, stores := range storeKinds {
		t.Run(name, func(t *testing.T) {
			h := newHarness(t, withConfig(stores(t), func(c *registry.Config) { c.BodyReadTimeout = 5 * time.Minute }))
			ctx := context.Background()
			a := craft(t, "payments.stalled", "1.0.0", validFiles("")...)
			ctype, body := multipartBody(t, manifestPart(t, a.Manifest), zipPart(a.Zip))
			path := versionPath("payments", a.Manifest.Connector, a.Manifest.ConnectorVersion)
			stalled := rawUpload(t, h.url, path, h.publisher, ctype, body, len(body)-2)
			waitForBlob(t, h.blobs, a.Manifest.Digest)

			// The collection ends while the upload stalls: it waits for
			// no client.
			collected := make(chan error, 1)
			go func() {
				_, err := h.srv.CollectGarbage(ctx, registry.GCOptions{Grace: time.Nanosecond})
				collected <- err
			}()
			select {
			case err := <-collected:
				if err != nil {
					t.Fatal(err)
				}
			case <-time.After(time.Minute):
				t.Fatal("garbage collection waits for an upload whose client stalls")
			}
			if _, err := h.blobs.Stat(ctx, a.Manifest.Digest); err != nil {
				t.Fatalf("garbage collection removed the blob of an upload in flight: %v", err)
			}
			// Another tenant publishes meanwhile.
			if code, resp := h.publish(h.other, "catalog", craft(t, "catalog.meanwhile", "1.0.0", validFiles("")...)); code != http.StatusAccepted {
				t.Fatalf("a publish while an upload stalls: %d %s", code, resp)
			}
			// The stalled client ends its body: its version commits whole.
			if _, err := stalled.Write(body[len(body)-2:]); err != nil {
				t.Fatal(err)
			}
			resp, err := http.ReadResponse(bufio.NewReader(stalled), nil)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusAccepted {
				t.Fatalf("the stalled upload, finished: %s", resp.Status)
			}
			if missing := missingBlobs(t, h); len(missing) > 0 {
				t.Fatalf("committed versions name missing blobs: %v", missing)
			}
		})
	}
}

// TestGarbageCollectionNeverRemovesCommittedBlobs: a collection with no
// grace runs after every blob stored (between store and commit, for the
// upload and for each piece of certification's evidence) while versions
// are published and certified; after each, every blob a version names
// exists. On both backends.
func TestGarbageCollectionNeverRemovesCommittedBlobs(t *testing.T) {
	t.Parallel()
	for name, stores := range storeKinds {
		t.Run(name, func(t *testing.T) {
			o := stores(t)
			collecting := &collectingStore{Store: o.blobs}
			o.blobs = collecting
			h := newHarness(t, o)
			collecting.srv.Store(h.srv)
			h.startCertifier()
			for i := range 3 {
				a := craft(t, "payments.collected", fmt.Sprintf("1.0.%d", i), validFiles(fmt.Sprint(i))...)
				if code, body := h.publish(h.publisher, "payments", a); code != http.StatusAccepted {
					t.Fatalf("publish %d: %d %s", i, code, body)
				}
				v := h.waitFor("payments", a.Manifest.Connector, a.Manifest.ConnectorVersion)
				if v.Blobs[api.FileReport] == "" {
					t.Fatalf("version %d was %s with no report: %v", i, v.State, v.Blobs)
				}
				if missing := missingBlobs(t, h); len(missing) > 0 {
					t.Fatalf("round %d: committed versions name missing blobs: %v", i, missing)
				}
			}
			if n := collecting.runs.Load(); n < 10 {
				t.Fatalf("only %d collections ran", n)
			}
		})
	}
}

// TestFailedUploadRemovesItsBytesAtOnce: an upload whose artifact is
// stored and then refused leaves no blob behind, without any collection,
// while a refused upload of bytes a version already holds removes
// nothing. On both backends.
func TestFailedUploadRemovesItsBytesAtOnce(t *testing.T) {
	t.Parallel()
	for name, stores := range storeKinds {
		t.Run(name, func(t *testing.T) {
			h := newHarness(t, stores(t))
			ctx := context.Background()
			before := h.snapshot()
			// A zip that hashes right but is not an artifact: stored
			// whole, then refused.
			bad := craft(t, "payments.bad", "1.0.0", entry{name: "go.mod", data: []byte("module crafted\n")})
			code, body := h.publish(h.publisher, "payments", bad)
			if code != http.StatusBadRequest {
				t.Fatalf("bad artifact: %d %s", code, body)
			}
			if _, err := h.blobs.Stat(ctx, bad.Manifest.Digest); err == nil {
				t.Fatal("the refused upload's blob is still stored")
			}
			if after := h.snapshot(); after != before {
				t.Fatalf("storage changed:\nbefore:\n%s\nafter:\n%s", before, after)
			}
			// The same bytes offered as another version: stored (their
			// digest is the manifest's), then refused (the zip's paths name
			// the first version). The version that holds them keeps them.
			good := craft(t, "payments.kept", "1.0.0", validFiles("")...)
			if code, body := h.publish(h.publisher, "payments", good); code != http.StatusAccepted {
				t.Fatalf("publish: %d %s", code, body)
			}
			m := good.Manifest
			m.ConnectorVersion, m.Version = "1.0.1", "v1.0.1"
			ctype, raw := multipartBody(t, manifestPart(t, m), zipPart(good.Zip))
			if code, body := h.do("PUT", versionPath("payments", "payments.kept", "1.0.1"), h.publisher, ctype, bytes.NewReader(raw)); code != http.StatusBadRequest {
				t.Fatalf("the same bytes as another version: %d %s", code, body)
			}
			if _, err := h.blobs.Stat(ctx, good.Manifest.Digest); err != nil {
				t.Fatalf("a refused upload removed a committed version's blob: %v", err)
			}
		})
	}
}

// missingBlobs lists, per version, the blobs its record names that the
// store does not hold.
func missingBlobs(t *testing.T, h *harness) []string {
	t.Helper()
	ctx := context.Background()
	vs, err := h.meta.Search(ctx, meta.Query{States: []meta.State{meta.Pending, meta.Certifying, meta.Certified, meta.Rejected}})
	if err != nil {
		t.Fatal(err)
	}
	var missing []string
	for _, v := range vs {
		for name, d := range v.Blobs {
			if _, err := h.blobs.Stat(ctx, d); err != nil {
				missing = append(missing, v.Key().String()+" "+name)
			}
		}
	}
	return missing
}

// collectingStore is a blob store (the real one it wraps) after each of
// whose stores the registry collects garbage with no grace: the widest
// window a collection can find between a store and its commit. A
// collection that waits more than a few seconds (on a lock an upload
// holds) is left to run on its own.
type collectingStore struct {
	blobstore.Store
	srv  atomic.Pointer[registry.Server]
	runs atomic.Int64
}

func (c *collectingStore) Put(ctx context.Context, r io.Reader, want string, limit int64) (blobstore.Descriptor, error) {
	d, err := c.Store.Put(ctx, r, want, limit)
	srv := c.srv.Load()
	if err != nil || srv == nil {
		return d, err
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if _, err := srv.CollectGarbage(context.Background(), registry.GCOptions{Grace: time.Nanosecond}); err == nil || !strings.Contains(err.Error(), "closed") {
			c.runs.Add(1)
		}
	}()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
	}
	return d, err
}

// TestGarbageCollectionRacesUploadsAndCertification: collections with no
// grace run back to back while, round after round, versions are
// uploaded at once (one of them twice, the same bytes) and certified by
// two workers; after each round every blob a version names exists, and
// every version was certified exactly once. On both backends.
func TestGarbageCollectionRacesUploadsAndCertification(t *testing.T) {
	t.Parallel()
	for name, stores := range storeKinds {
		t.Run(name, func(t *testing.T) {
			h := newHarness(t, withConfig(stores(t), func(c *registry.Config) { c.CertifyWorkers = min(2, runtime.NumCPU()) }))
			ctx, stop := context.WithCancel(context.Background())
			collections := make(chan int)
			go func() {
				n := 0
				for ctx.Err() == nil {
					if _, err := h.srv.CollectGarbage(ctx, registry.GCOptions{Grace: time.Nanosecond}); err == nil {
						n++
					}
				}
				collections <- n
			}()
			h.startCertifier()
			var keys []meta.Key
			for round := range 3 {
				var wg sync.WaitGroup
				for i := range 3 {
					a := craft(t, "payments.raced", fmt.Sprintf("%d.0.%d", round+1, i), validFiles(fmt.Sprint(round, i))...)
					keys = append(keys, meta.Key{Namespace: "payments", Connector: a.Manifest.Connector, Version: a.Manifest.ConnectorVersion})
					copies := 1
					if i == 0 {
						copies = 2 // the same bytes twice at once: one wins, one replays
					}
					for range copies {
						wg.Go(func() {
							if code, body := h.publish(h.publisher, "payments", a); code != http.StatusAccepted && code != http.StatusOK {
								t.Errorf("publish %s: %d %s", a.Manifest.ConnectorVersion, code, body)
							}
						})
					}
				}
				wg.Wait()
				for _, k := range keys {
					h.waitFor(k.Namespace, k.Connector, k.Version)
				}
				if missing := missingBlobs(t, h); len(missing) > 0 {
					t.Fatalf("round %d: committed versions name missing blobs: %v", round, missing)
				}
			}
			stop()
			if n := <-collections; n == 0 {
				t.Fatal("no collection ran")
			}
			events, err := h.meta.Audit(context.Background(), 10000)
			if err != nil {
				t.Fatal(err)
			}
			finished := map[string]int{}
			for _, e := range events {
				if e.Action == string(meta.Certified) || e.Action == string(meta.Rejected) {
					finished[e.Subject]++
				}
			}
			for _, k := range keys {
				if finished[k.String()] != 1 {
					t.Errorf("%s finished certification %d times", k, finished[k.String()])
				}
			}
		})
	}
}
