package main

import (
	"bytes"
	"context"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/flowgen-dev/flowgen/artifact"
	"github.com/flowgen-dev/flowgen/internal/localtls"
	"github.com/flowgen-dev/flowgen/internal/testutil"
	"github.com/flowgen-dev/flowgen/registry/meta"
	"github.com/flowgen-dev/flowgen/runtime/s3blobs/s3test"
	"github.com/flowgen-dev/flowgen/runtime/store/pgstore/pgtest"
)

// e2e is registryd as a process on PostgreSQL and MinIO, with the flowgen
// binary as its client.
type e2e struct {
	t                  *testing.T
	repo, bin, dataDir string
	addr, url          string
	storage            []string
	// serveArgs are extra flags for registryd serve.
	serveArgs []string
	proc      *exec.Cmd
	logs      *testutil.SyncBuffer
	// cert and key serve HTTPS; client trusts cert.
	cert, key string
	client    *http.Client
}

func buildBinaries(t *testing.T, repo string) string {
	bin := t.TempDir()
	cmd := exec.Command("go", "build", "-o", bin, "./cmd/registryd", "./cmd/flowgen")
	cmd.Dir = repo
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	return bin
}

func freeAddr(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

func (e *e2e) registryd(args ...string) *exec.Cmd {
	cmd := exec.Command(filepath.Join(e.bin, "registryd"), append(args, e.storage...)...)
	cmd.Env = append(os.Environ(), "REGISTRYD_S3_ACCESS_KEY="+s3test.Config().AccessKey, "REGISTRYD_S3_SECRET_KEY="+s3test.Config().SecretKey)
	return cmd
}

func (e *e2e) start() {
	e.t.Helper()
	e.logs = &testutil.SyncBuffer{}
	e.proc = e.registryd(append([]string{"serve", "--addr", e.addr, "--flowgen-module", e.repo, "--fixture-database", pgtest.DatabaseURL(), "--shutdown-timeout", "5s", "--tls-cert", e.cert, "--tls-key", e.key}, e.serveArgs...)...)
	e.proc.Stderr = e.logs
	if err := e.proc.Start(); err != nil {
		e.t.Fatal(err)
	}
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		resp, err := e.client.Get(e.url + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return
			}
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("registryd not ready: %v\n%s", err, e.logs)
		}
	}
}

func (e *e2e) tokenCreate(args ...string) string {
	e.t.Helper()
	out, err := e.registryd(append([]string{"token", "create"}, args...)...).Output()
	if err != nil {
		e.t.Fatalf("token create: %v", err)
	}
	return strings.TrimSpace(string(out))
}

// flowgen runs the client; it returns stdout, stderr and the exit code.
func (e *e2e) flowgen(token string, args ...string) (string, string, int) {
	cmd := exec.Command(filepath.Join(e.bin, "flowgen"), args...)
	cmd.Env = append(os.Environ(), "FLOWGEN_REGISTRY="+e.url, "FLOWGEN_REGISTRY_TOKEN="+token, "SSL_CERT_FILE="+e.cert)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		e.t.Fatal(err)
	}
	return stdout.String(), stderr.String(), code
}

var examples = map[string]meta.Key{
	"charge":        {Namespace: "payments", Connector: "payments.charge", Version: "2.1.0"},
	"refund":        {Namespace: "payments", Connector: "payments.refund", Version: "1.0.3"},
	"normalize":     {Namespace: "orders", Connector: "orders.normalize", Version: "1.0.0"},
	"pricelist":     {Namespace: "catalog", Connector: "catalog.price_list", Version: "1.0.0"},
	"productlookup": {Namespace: "catalog", Connector: "catalog.product_lookup", Version: "1.2.0"},
	"putinvoice":    {Namespace: "storage", Connector: "storage.put_invoice", Version: "1.0.0"},
	"slackpost":     {Namespace: "notify", Connector: "notify.slack_post", Version: "0.9.0"},
	"upsertorder":   {Namespace: "warehouse", Connector: "warehouse.upsert_order", Version: "1.4.0"},
}

// TestEndToEnd: registryd on PostgreSQL and MinIO; every example connector
// published with flowgen publish (registryd is killed with SIGKILL
// mid-certification and restarted), pulled back with flowgen pull and
// checked with stock cosign, and a program built against connectors
// fetched by the stock go command through the registry's module proxy.
func TestEndToEnd(t *testing.T) {
	t.Parallel()
	repo, _ := filepath.Abs("../..")
	b := s3test.Blobs(t)
	e := &e2e{t: t, repo: repo, bin: buildBinaries(t, repo), dataDir: t.TempDir()}
	e.addr = freeAddr(t)
	e.url = "https://" + e.addr
	e.cert, e.key, e.client = selfSigned(t)
	e.storage = []string{"--data-dir", e.dataDir, "--database-url", pgtest.FreshSchema(t),
		"--s3-endpoint", s3test.Config().Endpoint, "--s3-bucket", s3test.FreshBucket(t, b), "--s3-prefix", "registry/"}
	e.start()
	t.Cleanup(func() {
		if e.proc.ProcessState == nil {
			e.proc.Process.Signal(syscall.SIGTERM)
			e.proc.Wait()
		}
		if t.Failed() {
			t.Logf("registryd log (tail):\n%s", tail(e.logs.String(), 40))
		}
	})
	admin := e.tokenCreate("--name", "admin", "--scope", "admin")
	puller := e.tokenCreate("--name", "platform", "--scope", "pull")

	// Upload every example without waiting.
	for dir, k := range examples {
		out, errOut, code := e.flowgen(admin, "publish", "--no-wait", "--namespace", k.Namespace, filepath.Join(repo, "examples/connectors", dir))
		if code != 0 || !strings.Contains(out, k.String()) {
			t.Fatalf("publish %s: %d\n%s%s", dir, code, out, errOut)
		}
	}
	// Kill registryd while it certifies, then start it again.
	waitForLog(t, e.logs, `"msg":"certifying"`)
	e.proc.Process.Signal(syscall.SIGKILL)
	e.proc.Wait()
	e.start()
	// Publishing again is idempotent and follows certification to the end.
	for dir, k := range examples {
		out, errOut, code := e.flowgen(admin, "publish", "--namespace", k.Namespace, filepath.Join(repo, "examples/connectors", dir))
		if code != 0 || !strings.Contains(out, k.String()+" certified") || !strings.Contains(errOut, "already there") {
			t.Fatalf("publish %s again: %d\n%s%s", dir, code, out, errOut)
		}
	}

	// Pull each back: verified and placed as a module proxy directory.
	pub := filepath.Join(e.dataDir, "registry.pub")
	pulled := t.TempDir()
	for _, k := range examples {
		out, errOut, code := e.flowgen(puller, "pull", "--key", pub, "--dir", pulled, k.String())
		if code != 0 || !strings.Contains(errOut, "4 signatures") || !strings.Contains(out, "GOPROXY=file://") {
			t.Fatalf("pull %s: %d\n%s%s", k, code, out, errOut)
		}
	}
	// The search sees them all.
	if out, _, code := e.flowgen(puller, "search", "--effects", "Effectful"); code != 0 || !strings.Contains(out, "payments/payments.charge") || strings.Contains(out, "orders.normalize") {
		t.Errorf("search: %d\n%s", code, out)
	}

	// Stock cosign verifies the registry's signatures on what was pulled.
	cosign := testutil.CosignPath(t)
	evidence := filepath.Join(pulled, "flowgen.dev/connectors/payments/charge/v2/@v/v2.1.0.certification")
	for _, f := range []string{"artifact.zip", "sbom.spdx.json", "report.json"} {
		p := filepath.Join(evidence, f)
		if out, err := exec.Command(cosign, "verify-blob", "--key", pub, "--signature", p+".sig", "--insecure-ignore-tlog", p).CombinedOutput(); err != nil {
			t.Errorf("cosign verify-blob %s: %v\n%s", f, err, out)
		}
	}

	// The stock go command: charge through the registry's proxy (the pull
	// token as the password in the proxy URL, which the go command sends as
	// basic auth), normalize from the directory flowgen pull filled.
	consumer := t.TempDir()
	gosum, _ := os.ReadFile(filepath.Join(repo, "go.sum"))
	os.WriteFile(filepath.Join(consumer, "go.sum"), gosum, 0o644)
	os.WriteFile(filepath.Join(consumer, "go.mod"), []byte("module example.com/consumer\n\ngo 1.26.0\n\nreplace github.com/flowgen-dev/flowgen => "+repo+"\n"), 0o644)
	os.WriteFile(filepath.Join(consumer, "main.go"), []byte(`package main

import (
	"fmt"

	charge "flowgen.dev/connectors/payments/charge/v2"
	"flowgen.dev/connectors/orders/normalize"
)

func main() {
	fmt.Println(charge.Egress(), len(normalize.Manifest()) > 0)
}
`), 0o644)
	// A platform team's machine: an empty module cache (a cache shared
	// with earlier runs could hold another build of the same connector
	// version); third-party modules come from this machine's cache as an
	// offline proxy.
	modcache, _ := exec.Command("go", "env", "GOMODCACHE").Output()
	upstream := "file://" + filepath.ToSlash(filepath.Join(strings.TrimSpace(string(modcache)), "cache", "download"))
	freshCache := t.TempDir()
	goCmd := func(proxy string, args ...string) {
		t.Helper()
		cmd := exec.Command("go", args...)
		cmd.Dir = consumer
		cmd.Env = append(os.Environ(), "GOPROXY="+proxy+","+upstream, "GOFLAGS=-mod=mod -modcacherw", "GOMODCACHE="+freshCache,
			"GONOSUMDB=flowgen.dev", "GOWORK=off", "SSL_CERT_FILE="+e.cert)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("go %s (GOPROXY=%s): %v\n%s", strings.Join(args, " "), proxy, err, out)
		}
	}
	charge, _ := artifact.Build(filepath.Join(repo, "examples/connectors/charge"), artifact.Options{})
	goCmd("https://token:"+puller+"@"+e.addr+"/go", "get", charge.Manifest.Module+"@"+charge.Manifest.Version)
	goCmd("file://"+filepath.ToSlash(pulled), "get", "flowgen.dev/connectors/orders/normalize@v1.0.0")
	run := exec.Command("go", "run", ".")
	run.Dir = consumer
	run.Env = append(os.Environ(), "GOFLAGS=-mod=mod -modcacherw", "GOMODCACHE="+freshCache, "GOPROXY=off", "GOWORK=off")
	out, err := run.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "[api.stripe.com] true") {
		t.Fatalf("the consumer program: %v\n%s", err, out)
	}
	// The go command checked the zip it fetched against the registry's digest.
	sum, _ := os.ReadFile(filepath.Join(consumer, "go.sum"))
	if !strings.Contains(string(sum), charge.Manifest.Module+" "+charge.Manifest.Version+" h1:") {
		t.Errorf("go.sum has no line for %s", charge.Manifest.Module)
	}

	// A graceful stop.
	e.proc.Process.Signal(syscall.SIGTERM)
	if err := e.proc.Wait(); err != nil {
		t.Errorf("registryd exit after SIGTERM: %v", err)
	}
	if !strings.Contains(e.logs.String(), "registryd stopped") {
		t.Errorf("no clean stop in the log")
	}
}

// waitForLog waits until the log contains s.
func waitForLog(t *testing.T, logs *testutil.SyncBuffer, s string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for !strings.Contains(logs.String(), s) {
		if ctx.Err() != nil {
			t.Fatalf("log never said %s:\n%s", s, logs)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func tail(s string, n int) string {
	lines := strings.Split(s, "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// selfSigned makes a certificate for 127.0.0.1 and a client that trusts it.
func selfSigned(t *testing.T) (certFile, keyFile string, client *http.Client) {
	certFile, keyFile, client, err := localtls.SelfSigned(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return certFile, keyFile, client
}
