package registry_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/flowgen-dev/flowgen/registry"
	"github.com/flowgen-dev/flowgen/registry/api"
	"github.com/flowgen-dev/flowgen/registry/blobstore"
)

var storeKinds = map[string]func(testing.TB) harnessOptions{"disk": diskStores, "postgres+s3": realStores}

// TestFailedUploadKeepsAConcurrentUploadsBlob: client B sends a whole
// artifact and stalls before the end of its body; client A uploads the
// same bytes and commits its version; B disconnects. A's version keeps
// its blob, and can be read back, however often the race is run.
func TestFailedUploadKeepsAConcurrentUploadsBlob(t *testing.T) {
	t.Parallel()
	for name, stores := range storeKinds {
		t.Run(name, func(t *testing.T) {
			h := newHarness(t, stores(t))
			for i := range 3 {
				a := craft(t, "payments.race", fmt.Sprintf("1.0.%d", i), validFiles("")...)
				ctype, body := multipartBody(t, manifestPart(t, a.Manifest), zipPart(a.Zip))
				path := versionPath("payments", a.Manifest.Connector, a.Manifest.ConnectorVersion)

				// B: the whole artifact part, then silence before the body ends.
				b := rawUpload(t, h.url, path, h.publisher, ctype, body, len(body)-2)
				waitForBlob(t, h.blobs, a.Manifest.Digest)
				// A: the same bytes, complete.
				if code, resp := h.do("PUT", path, h.publisher, ctype, bytes.NewReader(body)); code != http.StatusAccepted {
					t.Fatalf("A: %d %s", code, resp)
				}
				b.Close() // B gives up; its handler fails
				waitForHandlers(t, h)
				if _, err := h.blobs.Stat(context.Background(), a.Manifest.Digest); err != nil {
					t.Fatalf("race %d: A's committed version lost its blob: %v", i, err)
				}
				if code, zip := h.do("GET", path+"/files/"+api.FileArtifact, h.admin, "", nil); code != http.StatusOK || !bytes.Equal(zip, a.Zip) {
					t.Fatalf("race %d: reading the artifact back: %d", i, code)
				}
			}
		})
	}
}

// TestReplayRestoresMissingBlobs: a version whose blob was lost (by an
// operator, or by the bug this guards against) is healed by uploading the
// same bytes again.
func TestReplayRestoresMissingBlobs(t *testing.T) {
	t.Parallel()
	h := newHarness(t, diskStores(t))
	a := craft(t, "payments.heal", "1.0.0", validFiles("")...)
	if code, body := h.publish(h.publisher, "payments", a); code != http.StatusAccepted {
		t.Fatalf("publish: %d %s", code, body)
	}
	if err := h.blobs.Delete(context.Background(), a.Manifest.Digest); err != nil {
		t.Fatal(err)
	}
	if code, body := h.publish(h.publisher, "payments", a); code != http.StatusOK {
		t.Fatalf("replay: %d %s", code, body)
	}
	if _, err := h.blobs.Stat(context.Background(), a.Manifest.Digest); err != nil {
		t.Fatalf("the replay did not restore the blob: %v", err)
	}
}

// TestGarbageCollection: unreferenced blobs older than the grace period go
// (not in a dry run), referenced and young ones stay, on both backends.
func TestGarbageCollection(t *testing.T) {
	t.Parallel()
	for name, stores := range storeKinds {
		t.Run(name, func(t *testing.T) {
			h := newHarness(t, stores(t))
			ctx := context.Background()
			a := craft(t, "payments.kept", "1.0.0", validFiles("")...)
			if code, body := h.publish(h.publisher, "payments", a); code != http.StatusAccepted {
				t.Fatalf("publish: %d %s", code, body)
			}
			orphan, err := h.blobs.Put(ctx, bytes.NewReader([]byte("what a failed upload left")), "", 100)
			if err != nil {
				t.Fatal(err)
			}
			young, err := h.srv.CollectGarbage(ctx, registry.GCOptions{Grace: time.Hour})
			if err != nil || len(young.Removed) != 0 || young.Young != young.Blobs {
				t.Fatalf("nothing is older than an hour, yet: %+v %v", young, err)
			}
			// Make everything old enough: a grace of a nanosecond.
			dry, err := h.srv.CollectGarbage(ctx, registry.GCOptions{Grace: time.Nanosecond, DryRun: true})
			if err != nil || len(dry.Removed) != 1 || dry.Removed[0] != orphan.Digest || dry.Referenced != 2 {
				t.Fatalf("dry run: %+v %v", dry, err)
			}
			if _, err := h.blobs.Stat(ctx, orphan.Digest); err != nil {
				t.Fatalf("a dry run removed the orphan: %v", err)
			}
			rep, err := h.srv.CollectGarbage(ctx, registry.GCOptions{Grace: time.Nanosecond})
			if err != nil || len(rep.Removed) != 1 || rep.RemovedBytes != orphan.Size {
				t.Fatalf("collection: %+v %v", rep, err)
			}
			if _, err := h.blobs.Stat(ctx, orphan.Digest); !errors.Is(err, blobstore.ErrNotFound) {
				t.Errorf("the orphan survived: %v", err)
			}
			for _, d := range []string{a.Manifest.Digest} {
				if _, err := h.blobs.Stat(ctx, d); err != nil {
					t.Errorf("a referenced blob was collected: %v", err)
				}
			}
		})
	}
}

// TestSweepRemovesWhatAKilledProcessLeft: an unpacked source tree in the
// work directory from before a restart goes; the blob store's own sweep is
// in its conformance tests.
func TestSweepRemovesWhatAKilledProcessLeft(t *testing.T) {
	t.Parallel()
	work := t.TempDir()
	left := filepath.Join(work, "certify-123", "src", "charge")
	if err := os.MkdirAll(left, 0o755); err != nil {
		t.Fatal(err)
	}
	other := filepath.Join(work, "not-ours")
	os.MkdirAll(other, 0o755)
	h := newHarness(t, withConfig(diskStores(t), func(c *registry.Config) { c.WorkDir = work }))
	if err := h.srv.Sweep(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(work, "certify-123")); !os.IsNotExist(err) {
		t.Errorf("the work directory a killed certification left is still there: %v", err)
	}
	if _, err := os.Stat(other); err != nil {
		t.Errorf("the sweep removed what is not certification's: %v", err)
	}
}

func withConfig(o harnessOptions, f func(*registry.Config)) harnessOptions {
	o.cfg = f
	return o
}

// rawUpload starts a PUT with the whole body's Content-Length but sends
// only its first n bytes; closing the connection gives up.
func rawUpload(t *testing.T, base, path, token, ctype string, body []byte, n int) net.Conn {
	t.Helper()
	u, _ := url.Parse(base)
	c, err := net.Dial("tcp", u.Host)
	if err != nil {
		t.Fatal(err)
	}
	w := bufio.NewWriter(c)
	fmt.Fprintf(w, "PUT %s HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\nContent-Type: %s\r\nContent-Length: %d\r\n\r\n", path, u.Host, token, ctype, len(body))
	w.Write(body[:n])
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// waitForBlob waits until the store has digest.
func waitForBlob(t *testing.T, s blobstore.Store, digest string) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if _, err := s.Stat(context.Background(), digest); err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("blob %s never stored", digest)
		}
	}
}

// waitForHandlers waits until no publish is in flight.
func waitForHandlers(t *testing.T, h *harness) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if h.srv.UploadsInFlight() == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("an upload is still in flight")
		}
	}
}
