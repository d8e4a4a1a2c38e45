package registry_test

import (
	"context"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/mod/module"

	"github.com/flowgen-dev/flowgen/registry/meta"
)

// TestGoProxyLatestSkipsDeprecatedAndYanked: @latest is the highest
// release that is neither yanked nor deprecated while one is current
// (then the highest deprecated one); @v/list holds the same choice (the
// versions neither yanked nor deprecated, else the deprecated ones);
// every version stays fetchable by its number.
func TestGoProxyLatestSkipsDeprecatedAndYanked(t *testing.T) {
	t.Parallel()
	h := newHarness(t, diskStores(t))
	ctx := context.Background()
	versions := []string{"1.0.0", "1.1.0", "1.2.0", "1.3.0-rc.1"}
	for _, v := range versions {
		a := craft(t, "payments.proxied", v, validFiles(v)...)
		if code, body := h.publish(h.publisher, "payments", a); code != http.StatusAccepted {
			t.Fatalf("publish %s: %d %s", v, code, body)
		}
		if _, err := h.meta.UpdateVersion(ctx, meta.Key{Namespace: "payments", Connector: "payments.proxied", Version: v}, func(m *meta.Version) error {
			m.State = meta.Certified
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	esc, _ := module.EscapePath("flowgen.dev/connectors/payments/proxied")
	gp := "/go/" + esc
	mark := func(version, action, reason string) {
		t.Helper()
		if code, body := h.do("POST", versionPath("payments", "payments.proxied", version)+"/"+action, h.publisher, "application/json", strings.NewReader(`{"reason":"`+reason+`"}`)); code != http.StatusOK {
			t.Fatalf("%s %s: %d %s", action, version, code, body)
		}
	}
	latest := func(want string) {
		t.Helper()
		if code, body := h.do("GET", gp+"/@latest", h.puller, "", nil); code != http.StatusOK || !strings.Contains(string(body), `"Version": "`+want+`"`) {
			t.Errorf("@latest: %d %s, want %s", code, body, want)
		}
	}
	latest("v1.2.0")
	mark("1.2.0", "deprecate", "charges twice")
	latest("v1.1.0")
	mark("1.1.0", "yank", "leaks")
	latest("v1.0.0")
	mark("1.0.0", "deprecate", "old")
	latest("v1.3.0-rc.1") // the only version not deprecated, though a pre-release
	if _, body := h.do("GET", gp+"/@v/list", h.puller, "", nil); string(body) != "v1.3.0-rc.1\n" {
		t.Errorf("@v/list: %q, want the one version neither yanked nor deprecated", body)
	}
	mark("1.3.0-rc.1", "deprecate", "old too")
	latest("v1.2.0") // every version deprecated: the highest release of them
	if _, body := h.do("GET", gp+"/@v/list", h.puller, "", nil); string(body) != "v1.0.0\nv1.2.0\nv1.3.0-rc.1\n" {
		t.Errorf("@v/list: %q, want every version but the yanked one once all are deprecated", body)
	}
	if code, _ := h.do("GET", gp+"/@v/v1.1.0.info", h.puller, "", nil); code != http.StatusOK {
		t.Errorf("a yanked version is no longer fetchable by number: %d", code)
	}
}

// TestGoCommandFollowsDeprecation runs the stock go command against the
// proxy: go get ...@latest and the version list move off a version the
// registry deprecated (the go command reads @v/list, not @latest, while
// the list has versions), and a `// Deprecated:` comment the author
// published in a version's go.mod reaches the go command, which warns.
func TestGoCommandFollowsDeprecation(t *testing.T) {
	t.Parallel()
	h := newHarness(t, diskStores(t))
	ctx := context.Background()
	const mod = "flowgen.dev/connectors/payments/gocmd"
	gomod := map[string]string{
		"1.0.0": "module " + mod + "\n\ngo 1.26\n",
		"1.1.0": "// Deprecated: use payments.charge instead.\nmodule " + mod + "\n\ngo 1.26\n",
		"1.2.0": "module " + mod + "\n\ngo 1.26\n",
	}
	for _, v := range []string{"1.0.0", "1.1.0", "1.2.0"} {
		a := craftModule(t, mod, "payments.gocmd", v,
			entry{name: "connector.yaml", data: []byte("id: payments.gocmd\n")},
			entry{name: "go.mod", data: []byte(gomod[v])},
			entry{name: "gocmd.go", data: []byte("package gocmd\n\n// Version is this version.\nconst Version = \"" + v + "\"\n")})
		if code, body := h.publish(h.publisher, "payments", a); code != http.StatusAccepted {
			t.Fatalf("publish %s: %d %s", v, code, body)
		}
		if _, err := h.meta.UpdateVersion(ctx, meta.Key{Namespace: "payments", Connector: "payments.gocmd", Version: v}, func(m *meta.Version) error {
			m.State = meta.Certified
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	if code, body := h.do("POST", versionPath("payments", "payments.gocmd", "1.2.0")+"/deprecate", h.publisher, "application/json", strings.NewReader(`{"reason":"charges twice"}`)); code != http.StatusOK {
		t.Fatalf("deprecate: %d %s", code, body)
	}

	// The go command sends credentials only over HTTPS.
	ts := httptest.NewUnstartedServer(h.srv.Handler())
	ts.StartTLS()
	t.Cleanup(ts.Close)
	certFile := filepath.Join(t.TempDir(), "cert.pem")
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ts.Certificate().Raw}), 0o644); err != nil {
		t.Fatal(err)
	}
	consumer := t.TempDir()
	if err := os.WriteFile(filepath.Join(consumer, "go.mod"), []byte("module example.com/consumer\n\ngo 1.26\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	goCmd := func(args ...string) string {
		t.Helper()
		cmd := exec.Command("go", args...)
		cmd.Dir = consumer
		cmd.Env = append(os.Environ(), "GOPROXY=https://token:"+h.puller+"@"+strings.TrimPrefix(ts.URL, "https://")+"/go",
			"GOFLAGS=-mod=mod -modcacherw", "GOMODCACHE="+t.TempDir(), "GONOSUMDB=flowgen.dev", "GOWORK=off", "GOTOOLCHAIN=local", "SSL_CERT_FILE="+certFile)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	out := goCmd("get", mod+"@latest")
	if !strings.Contains(out, mod+" v1.1.0") || !strings.Contains(out, "is deprecated: use payments.charge instead.") {
		t.Errorf("go get @latest: want v1.1.0 with the go.mod's deprecation warning:\n%s", out)
	}
	if out := goCmd("list", "-m", "-versions", mod); strings.TrimSpace(out) != mod+" v1.0.0 v1.1.0" {
		t.Errorf("go list -m -versions: %q, want the deprecated v1.2.0 left out", out)
	}
	// Still fetchable by its number.
	if out := goCmd("get", mod+"@v1.2.0"); !strings.Contains(out, mod+" v1.2.0") {
		t.Errorf("go get @v1.2.0:\n%s", out)
	}
}
