package registry_test

import (
	"bufio"
	"context"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"

	"github.com/flowgen-dev/flowgen/artifact"
	"github.com/flowgen-dev/flowgen/registry"
	"github.com/flowgen-dev/flowgen/registry/blobstore"
	"github.com/flowgen-dev/flowgen/registry/meta"
)

// TestRestartMidCertificationResumes: a registry stopped while certifying
// leaves the version invisible; the next one certifies it.
func TestRestartMidCertificationResumes(t *testing.T) {
	t.Parallel()
	o := diskStores(t)
	h := newHarness(t, o)
	a, err := artifact.Build("../examples/connectors/normalize", artifact.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if code, body := h.publish(h.orders, "orders", a); code != http.StatusAccepted {
		t.Fatalf("publish: %d %s", code, body)
	}
	k := meta.Key{Namespace: "orders", Connector: a.Manifest.Connector, Version: a.Manifest.ConnectorVersion}
	h.startCertifier()
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(20 * time.Millisecond) {
		v, _ := h.meta.GetVersion(context.Background(), k)
		if v.State == meta.Certifying && strings.Contains(v.Progress, "static-analysis") {
			break
		}
		if time.Now().After(deadline) || v.State == meta.Certified {
			t.Fatalf("never caught it certifying: %s %s", v.State, v.Progress)
		}
	}
	h.cancelCertifier() // the registry stops
	v, _ := h.meta.GetVersion(context.Background(), k)
	if v.State != meta.Certifying {
		t.Fatalf("after the stop: %s", v.State)
	}
	path := versionPath(k.Namespace, k.Connector, k.Version)
	if code, _ := h.do("GET", path+"/files/artifact.zip", h.puller, "", nil); code != http.StatusNotFound {
		t.Fatalf("a half-certified version is served: %d", code)
	}

	restarted := newHarness(t, harnessOptions{meta: o.meta, blobs: o.blobs, blobDir: o.blobDir, certify: true})
	if v := restarted.waitFor(k.Namespace, k.Connector, k.Version); v.State != meta.Certified {
		t.Fatalf("after restart: %s %s", v.State, v.Reason)
	}
	if code, _ := restarted.do("GET", path+"/files/artifact.zip", restarted.puller, "", nil); code != http.StatusOK {
		t.Fatalf("certified version not served: %d", code)
	}
}

// TestS3UnavailableDuringPublish: storage down is a 503 and no version.
func TestS3UnavailableDuringPublish(t *testing.T) {
	t.Parallel()
	o := diskStores(t)
	client, err := minio.New("127.0.0.1:1", &minio.Options{Creds: credentials.NewStaticV4("x", "y", ""), MaxRetries: 1})
	if err != nil {
		t.Fatal(err)
	}
	o.blobs, o.blobDir = blobstore.NewS3(client, "nowhere", ""), ""
	h := newHarness(t, o)
	code, body := h.publish(h.publisher, "payments", craft(t, "payments.charge", "1.0.0", validFiles("a")...))
	if code != http.StatusServiceUnavailable || apiError(t, body).Code != "storage_unavailable" {
		t.Fatalf("publish with S3 down: %d %s", code, body)
	}
	if vs, _ := h.meta.Search(context.Background(), meta.Query{States: []meta.State{meta.Pending}}); len(vs) != 0 {
		t.Fatalf("a version was recorded: %v", vs)
	}
	if code, body := h.do("GET", "/readyz", "", "", nil); code != http.StatusServiceUnavailable || !strings.Contains(string(body), "blobs") {
		t.Errorf("readyz with S3 down: %d %s", code, body)
	}
}

// TestSlowLorisUploadIsCutOff: an upload that stops sending is answered
// 408 and its connection closed once BodyReadTimeout passes; nothing is
// stored.
func TestSlowLorisUploadIsCutOff(t *testing.T) {
	t.Parallel()
	o := diskStores(t)
	o.cfg = func(c *registry.Config) { c.BodyReadTimeout = 300 * time.Millisecond }
	h := newHarness(t, o)
	before := h.snapshot()
	conn, err := net.Dial("tcp", strings.TrimPrefix(h.url, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	req := "PUT " + versionPath("payments", "payments.charge", "1.0.0") + " HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + h.publisher +
		"\r\nContent-Type: multipart/form-data; boundary=XX\r\nContent-Length: 100000\r\n\r\n--XX\r\nContent-Disposition: form-data; name=\"manifest\"\r\n\r\n{"
	conn.Write([]byte(req))
	conn.SetReadDeadline(time.Now().Add(30 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("no response to a stalled upload: %v", err)
	}
	if resp.StatusCode != http.StatusRequestTimeout {
		t.Fatalf("status %d, want 408", resp.StatusCode)
	}
	if after := h.snapshot(); after != before {
		t.Errorf("storage changed:\n%s\n%s", before, after)
	}
}
