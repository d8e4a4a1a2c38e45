package registry_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	"golang.org/x/mod/module"

	"github.com/flowgen-dev/flowgen/artifact"
	"github.com/flowgen-dev/flowgen/certify"
	"github.com/flowgen-dev/flowgen/pull"
	"github.com/flowgen-dev/flowgen/registry"
	"github.com/flowgen-dev/flowgen/registry/api"
	"github.com/flowgen-dev/flowgen/registry/blobstore"
	"github.com/flowgen-dev/flowgen/registry/client"
	"github.com/flowgen-dev/flowgen/registry/meta"
	"github.com/flowgen-dev/flowgen/runtime/s3blobs/s3test"
	"github.com/flowgen-dev/flowgen/runtime/store/pgstore/pgtest"
)

// realStores is PostgreSQL and MinIO, as .ci/run starts them.
func realStores(t testing.TB) harnessOptions {
	m, err := meta.OpenPostgres(context.Background(), pgtest.FreshSchema(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	b := s3test.Blobs(t)
	bucket := s3test.FreshBucket(t, b)
	return harnessOptions{meta: m, blobs: blobstore.NewS3(b.Client(), bucket, "registry/"), s3: b.Client(), bucket: bucket}
}

func TestPublishCertifyPullOnDisk(t *testing.T) { publishCertifyPull(t, diskStores(t)) }

func TestPublishCertifyPullOnPostgresAndS3(t *testing.T) { publishCertifyPull(t, realStores(t)) }

// publishCertifyPull: an example connector goes from upload to certified,
// its evidence verifies against the registry's key, the Go proxy serves
// it, pull policies and yanking are enforced.
func publishCertifyPull(t *testing.T, o harnessOptions) {
	o.certify = true
	h := newHarness(t, o)
	a, err := artifact.Build("../examples/connectors/charge", artifact.Options{})
	if err != nil {
		t.Fatal(err)
	}
	code, body := h.publish(h.publisher, "payments", a)
	if code != http.StatusAccepted {
		t.Fatalf("publish: %d %s", code, body)
	}
	var v meta.Version
	json.Unmarshal(body, &v)
	if v.State != meta.Pending || v.Digest != a.Manifest.Digest || v.Provider != "stripe" || v.Effects != "Effectful" {
		t.Fatalf("accepted version: %+v", v)
	}
	// Not visible while pending.
	if code, body := h.do("GET", "/v1/connectors?q=charge", h.puller, "", nil); code != 200 || strings.Contains(string(body), "payments.charge") {
		t.Fatalf("a pending version is listed: %d %s", code, body)
	}
	path := versionPath("payments", "payments.charge", "2.1.0")
	v = h.waitFor("payments", "payments.charge", "2.1.0")
	if v.State != meta.Certified {
		_, report := h.do("GET", path+"/files/report.json", h.puller, "", nil)
		t.Fatalf("not certified: %s\n%s", v.Reason, report)
	}

	// The evidence verifies with the registry's public key.
	code, pub := h.do("GET", "/v1/public-key", "", "", nil)
	if code != 200 || !strings.Contains(string(pub), "PUBLIC KEY") {
		t.Fatalf("public key: %d %s", code, pub)
	}
	dir := t.TempDir()
	for _, f := range []string{"artifact.zip", "artifact.zip.sig", "artifact.json", "sbom.spdx.json", "sbom.spdx.json.sig", "report.json", "report.json.sig", "module.wasm", "module.wasm.sig"} {
		code, data := h.do("GET", path+"/files/"+f, h.puller, "", nil)
		if code != 200 {
			t.Fatalf("%s: %d %s", f, code, data)
		}
		os.WriteFile(filepath.Join(dir, f), data, 0o644)
	}
	ver, err := certify.Verify(dir, pub)
	if err != nil || !ver.OK() || len(ver.Verified) != 4 {
		t.Fatalf("verify downloaded evidence: %v %+v", err, ver)
	}
	if ver.Report.Tools["flowgen"] != "registryd" {
		t.Errorf("the report was not made by the registry: %v", ver.Report.Tools)
	}
	pullThroughTamperingProxy(t, h, pub)

	// Search and list see it now.
	for _, q := range []string{"/v1/connectors?q=charge", "/v1/connectors?effects=Effectful&provider=stripe", "/v1/connectors?capability=http.write",
		"/v1/connectors/payments/payments.charge/versions"} {
		if code, body := h.do("GET", q, h.puller, "", nil); code != 200 || !strings.Contains(string(body), `"payments.charge"`) {
			t.Errorf("%s: %d %s", q, code, body)
		}
	}
	if _, body := h.do("GET", "/v1/connectors?determinism=Strict", h.puller, "", nil); strings.Contains(string(body), "payments.charge") {
		t.Errorf("determinism filter ignored: %s", body)
	}

	// The Go module proxy.
	esc, _ := module.EscapePath(a.Manifest.Module)
	gp := "/go/" + esc
	for _, c := range []struct{ path, want string }{
		{gp + "/@v/list", "v2.1.0\n"},
		{gp + "/@latest", `"Version": "v2.1.0"`},
		{gp + "/@v/v2.1.0.info", `"Version": "v2.1.0"`},
		{gp + "/@v/v2.1.0.mod", "module " + a.Manifest.Module},
	} {
		if code, body := h.do("GET", c.path, h.puller, "", nil); code != 200 || !strings.Contains(string(body), c.want) {
			t.Errorf("%s: %d %q, want %q", c.path, code, body, c.want)
		}
	}
	if code, body := h.do("GET", gp+"/@v/v2.1.0.zip", h.puller, "", nil); code != 200 || artifact.Digest(body) != a.Manifest.Digest {
		t.Errorf("proxy zip: %d, digest %s", code, artifact.Digest(body))
	}
	if code, _ := h.do("GET", gp+"/@v/v9.9.9.info", h.puller, "", nil); code != 404 {
		t.Errorf("unknown version: %d, want 404 (so that go falls through)", code)
	}

	// Pull policies, enforced from the signed evidence.
	strict := h.token("strict-platform", []string{registry.ScopePull}, `apiVersion: flowgen.dev/v1
kind: PullPolicy
maxEffects: ReadOnly
egress: ["*.example.com"]
forbiddenDataClasses: [financial.card]
requiredChecks: [determinism]
`)
	code, body = h.do("GET", path+"/files/artifact.zip", strict, "", nil)
	e := apiError(t, body)
	if code != 403 || e.Code != "policy" || len(e.Details) != 3 ||
		!containsAll(strings.Join(e.Details, "\n"), "maxEffects", "Effectful", "egress", "api.stripe.com", "forbiddenDataClasses", "financial.card", "inputs/in", "signed report") {
		t.Errorf("policy rejection: %d %s", code, body)
	}
	if code, body := h.do("GET", gp+"/@v/list", strict, "", nil); code != 200 || len(body) != 0 {
		t.Errorf("the proxy lists versions the policy rejects: %d %q", code, body)
	}
	lenient := h.token("payments-platform", []string{registry.ScopePull}, "apiVersion: flowgen.dev/v1\nkind: PullPolicy\nmaxEffects: Effectful\negress: [\"*.stripe.com\"]\nnamespaces: [payments]\npublishers: [ci-payments]\nrequiredChecks: [duplicate-delivery, static-analysis]\n")
	if code, body := h.do("GET", gp+"/@v/list", lenient, "", nil); code != 200 || string(body) != "v2.1.0\n" {
		t.Errorf("a satisfied policy: %d %q", code, body)
	}

	cataloguePages(t, h)

	// Yanked: gone from listings and @latest, still fetchable by version.
	if code, body := h.do("POST", path+"/yank", h.publisher, "application/json", strings.NewReader(`{"reason":"double charges on retry"}`)); code != 200 {
		t.Fatalf("yank: %d %s", code, body)
	}
	if _, body := h.do("GET", gp+"/@v/list", h.puller, "", nil); len(body) != 0 {
		t.Errorf("yanked version still listed: %q", body)
	}
	if code, _ := h.do("GET", gp+"/@v/v2.1.0.zip", h.puller, "", nil); code != 200 {
		t.Errorf("a yanked version can no longer be fetched: %d", code)
	}
	if code, body := h.do("GET", "/v1/audit", h.admin, "", nil); code != 200 || !containsAll(string(body), `"publish"`, `"certified"`, `"yank"`, "double charges") {
		t.Errorf("audit: %d %s", code, body)
	}

	// Tampered evidence behind a policy is as loud as a tampered artifact
	// (the version page read it too: one more tampered blob counted):
	// 500, not a 404 that sends the go command to the next proxy. (A fresh
	// policy, so no verdict is cached, as after a restart.)
	tamper(t, h, v.Blobs[api.FileReport])
	reader := h.pageReader(t)
	reader.signIn(t, h.puller)
	if _, body := reader.Get("/ui/connectors/payments/payments.charge/versions/2.1.0"); !strings.Contains(body, "tampered: the stored file no longer has its digest") {
		t.Errorf("the version page does not show the tampered report:\n%s", body)
	}
	fresh := h.token("fresh-platform", []string{registry.ScopePull}, "apiVersion: flowgen.dev/v1\nkind: PullPolicy\nmaxEffects: Effectful\n")
	for _, q := range []string{gp + "/@v/list", gp + "/@v/v2.1.0.info", "/v1/connectors?q=charge"} {
		if code, body := h.do("GET", q, fresh, "", nil); code != 500 || apiError(t, body).Code != "tampered" {
			t.Errorf("%s with tampered evidence behind a policy: %d %s", q, code, body)
		}
	}

	// Tampering with storage is detected and nothing is served.
	tamper(t, h, v.Digest)
	code, body = h.do("GET", path+"/files/artifact.zip", h.puller, "", nil)
	if code != 500 || apiError(t, body).Code != "tampered" {
		t.Errorf("tampered artifact: %d %s", code, body)
	}
	if code, _ := h.do("GET", gp+"/@v/v2.1.0.zip", h.puller, "", nil); code != 500 {
		t.Errorf("tampered proxy zip: %d", code)
	}
	if code, body := h.do("GET", "/metrics", h.admin, "", nil); code != 200 || !containsAll(string(body), "registry_tampered_blobs_total 6", `registry_certifications_total{state="certified"} 1`, `registry_publishes_total{outcome="ok"} 1`) {
		t.Errorf("metrics: %d\n%s", code, body)
	}
}

// tamper overwrites a stored blob in place, as someone with write access
// to the bucket or directory could.
func tamper(t *testing.T, h *harness, digest string) {
	hexPart := strings.TrimPrefix(digest, "sha256:")
	if h.blobDir != "" {
		var found bool
		filepath.Walk(h.blobDir, func(p string, info os.FileInfo, err error) error {
			if err == nil && !info.IsDir() && strings.Contains(p, hexPart) {
				os.Chmod(p, 0o644)
				if err := os.WriteFile(p, []byte("not the artifact"), 0o644); err != nil {
					t.Fatal(err)
				}
				found = true
			}
			return nil
		})
		if !found {
			t.Fatalf("blob %s not found under %s", digest, h.blobDir)
		}
		return
	}
	if _, err := h.s3.PutObject(context.Background(), h.bucket, "registry/blobs/sha256/"+hexPart, strings.NewReader("not the artifact"), 16, minio.PutObjectOptions{}); err != nil {
		t.Fatal(err)
	}
}

// TestConcurrentPublishesOfOneVersion: 20 uploads of the same version with
// different digests at once: exactly one wins, the rest get 409, and once
// garbage is collected only the winner's blobs remain.
func TestConcurrentPublishesOfOneVersion(t *testing.T) {
	t.Parallel()
	for name, stores := range storeKinds {
		t.Run(name, func(t *testing.T) {
			h := newHarness(t, withConfig(stores(t), func(c *registry.Config) {
				c.MaxConcurrentUploads, c.MaxUploadsPerNamespace, c.MaxUploadsPerToken = 32, 24, 24
			}))
			var wg sync.WaitGroup
			codes := make([]int, 20)
			for i := range codes {
				a := craft(t, "payments.charge", "4.0.0", validFiles(strings.Repeat("x", i))...)
				wg.Go(func() { codes[i], _ = h.publish(h.publisher, "payments", a) })
			}
			wg.Wait()
			won, lost := 0, 0
			for _, c := range codes {
				switch c {
				case http.StatusAccepted:
					won++
				case http.StatusConflict:
					lost++
				default:
					t.Errorf("status %d", c)
				}
			}
			if won != 1 || lost != 19 {
				t.Fatalf("%d won, %d got 409: %v", won, lost, codes)
			}
			v, err := h.meta.GetVersion(context.Background(), meta.Key{Namespace: "payments", Connector: "payments.charge", Version: "4.0.0"})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := h.srv.CollectGarbage(context.Background(), registry.GCOptions{Grace: time.Nanosecond}); err != nil {
				t.Fatal(err)
			}
			if n := countBlobs(t, h); n != 2 {
				t.Errorf("%d blobs stored, want the winner's zip and manifest (%v)", n, v.Blobs)
			}
		})
	}
}

func countBlobs(t *testing.T, h *harness) int {
	if h.blobDir != "" {
		n := 0
		filepath.Walk(h.blobDir, func(p string, info os.FileInfo, err error) error {
			if err == nil && !info.IsDir() && !strings.Contains(p, string(filepath.Separator)+"uploads"+string(filepath.Separator)) {
				n++
			}
			return nil
		})
		return n
	}
	n := 0
	for obj := range h.s3.ListObjects(context.Background(), h.bucket, minio.ListObjectsOptions{Prefix: "registry/", Recursive: true}) {
		if obj.Err == nil && !strings.Contains(obj.Key, "/uploads/") {
			n++
		}
	}
	return n
}

// pullThroughTamperingProxy: flowgen pull through a man in the middle
// that appends a require to every .mod the Go proxy serves places only
// what the registry's key signed: the flowgen module's go.mod is the one
// in its signed zip.
func pullThroughTamperingProxy(t *testing.T, h *harness, pub []byte) {
	t.Helper()
	target, _ := url.Parse(h.url)
	mitm := httputil.NewSingleHostReverseProxy(target)
	mitm.ModifyResponse = func(resp *http.Response) error {
		if strings.HasSuffix(resp.Request.URL.Path, ".mod") {
			body, _ := io.ReadAll(resp.Body)
			body = append(body, "require evil.example/backdoor v1.0.0\n"...)
			resp.Body = io.NopCloser(bytes.NewReader(body))
			resp.ContentLength = int64(len(body))
			resp.Header.Set("Content-Length", strconv.Itoa(len(body)))
		}
		return nil
	}
	proxy := httptest.NewServer(mitm)
	defer proxy.Close()
	dir := t.TempDir()
	res, err := pull.Pull(context.Background(), client.New(proxy.URL, h.puller), api.Key{Namespace: "payments", Connector: "payments.charge", Version: "2.1.0"}, pull.Options{Dir: dir, Key: pub})
	if err != nil {
		t.Fatalf("pull: %v", err)
	}
	if res.FlowgenVersion == "" {
		t.Fatal("the pull placed no flowgen module: nothing was tested")
	}
	var placed []string
	filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err == nil && strings.HasSuffix(path, ".mod") {
			placed = append(placed, path)
			if data, _ := os.ReadFile(path); bytes.Contains(data, []byte("evil.example")) {
				t.Errorf("pull placed %s with the man in the middle's require", path)
			}
		}
		return nil
	})
	if len(placed) < 2 {
		t.Errorf("placed .mod files %v, want the connector's and flowgen's", placed)
	}
}
