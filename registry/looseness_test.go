package registry_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/flowgen-dev/flowgen/registry"
)

// TestLooseEnds: /metrics needs the metrics scope unless it is served on an
// address of its own; health checks ignore credentials, even unknown ones;
// a JSON body with data after its value is refused.
func TestLooseEnds(t *testing.T) {
	t.Parallel()
	h := newHarness(t, diskStores(t))
	scraper := h.token("prometheus", []string{registry.ScopeMetrics}, "")
	for _, c := range []struct {
		tok  string
		want int
	}{{"", http.StatusUnauthorized}, {h.puller, http.StatusForbidden}, {scraper, http.StatusOK}, {h.admin, http.StatusOK}} {
		if code, _ := h.do("GET", "/metrics", c.tok, "", nil); code != c.want {
			t.Errorf("/metrics with %q: %d, want %d", c.tok, code, c.want)
		}
	}
	for _, path := range []string{"/healthz", "/readyz"} {
		for _, tok := range []string{"", "fgr_unknown", h.puller} {
			if code, body := h.do("GET", path, tok, "", nil); code != http.StatusOK {
				t.Errorf("%s with %q: %d %s", path, tok, code, body)
			}
		}
	}
	code, body := h.do("POST", versionPath("payments", "payments.charge", "1.0.0")+"/yank", h.publisher, "application/json",
		strings.NewReader(`{"reason":"x"} {"reason":"smuggled"}`))
	if code != http.StatusBadRequest || !strings.Contains(string(body), "after the JSON value") {
		t.Errorf("trailing JSON: %d %s", code, body)
	}

	// Served elsewhere: not on the API at all, and open on its own listener.
	elsewhere := newHarness(t, withConfig(diskStores(t), func(c *registry.Config) { c.MetricsElsewhere = true }))
	if code, _ := elsewhere.do("GET", "/metrics", elsewhere.admin, "", nil); code != http.StatusNotFound {
		t.Errorf("/metrics on the API with MetricsElsewhere: %d", code)
	}
	ms := httptest.NewServer(elsewhere.srv.MetricsHandler())
	defer ms.Close()
	resp, err := http.Get(ms.URL)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("the metrics listener: %v %v", resp, err)
	}
	resp.Body.Close()
}
