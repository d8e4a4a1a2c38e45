package registry_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"golang.org/x/mod/module"

	"github.com/flowgen-dev/flowgen/registry/meta"
)

// TestGoProxyLatestSkipsDeprecatedAndYanked: @latest is the highest
// release that is neither yanked nor deprecated while one is current
// (then the highest deprecated one); @v/list leaves out yanked versions
// only; every version stays fetchable by its number.
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
	if _, body := h.do("GET", gp+"/@v/list", h.puller, "", nil); string(body) != "v1.0.0\nv1.2.0\nv1.3.0-rc.1\n" {
		t.Errorf("@v/list: %q, want every version but the yanked one", body)
	}
	if code, _ := h.do("GET", gp+"/@v/v1.1.0.info", h.puller, "", nil); code != http.StatusOK {
		t.Errorf("a yanked version is no longer fetchable by number: %d", code)
	}
}
