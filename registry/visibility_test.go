package registry_test

import (
	"encoding/json"
	"net/http"
	"os"
	"strings"
	"testing"

	"github.com/flowgen-dev/flowgen/registry"
)

// TestOnlyPublishersSeeWhatIsNotCertified: a rejected version does not
// exist for pull tokens and for other namespaces' publishers, in search,
// listings, metadata and files; its publishers see it with its reason and
// report, neither of which names a path of the server's.
func TestOnlyPublishersSeeWhatIsNotCertified(t *testing.T) {
	t.Parallel()
	h := newHarness(t, withConfig(diskStores(t), func(c *registry.Config) {}))
	h.startCertifier()
	a := craft(t, "payments.broken", "1.0.0", validFiles("")...)
	if code, body := h.publish(h.publisher, "payments", a); code != http.StatusAccepted {
		t.Fatalf("publish: %d %s", code, body)
	}
	v := h.waitFor("payments", "payments.broken", "1.0.0")
	if v.State != "rejected" {
		t.Fatalf("state %s", v.State)
	}
	path := versionPath("payments", "payments.broken", "1.0.0")
	for name, tok := range map[string]string{"pull token": h.puller, "another namespace's publisher": h.other} {
		for _, req := range []string{"/v1/connectors?state=pending,certifying,rejected", "/v1/connectors", "/v1/connectors/payments/payments.broken/versions"} {
			code, body := h.do("GET", req, tok, "", nil)
			if code != http.StatusOK || strings.Contains(string(body), "payments.broken") {
				t.Errorf("%s: GET %s: %d shows the rejected version:\n%s", name, req, code, body)
			}
		}
		for _, req := range []string{path, path + "/files/report.json", path + "/files/artifact.zip"} {
			if code, body := h.do("GET", req, tok, "", nil); code != http.StatusNotFound {
				t.Errorf("%s: GET %s: %d %s", name, req, code, body)
			}
		}
	}
	code, body := h.do("GET", path, h.publisher, "", nil)
	if code != http.StatusOK || !strings.Contains(string(body), `"rejected"`) {
		t.Fatalf("the publisher: %d %s", code, body)
	}
	_, report := h.do("GET", path+"/files/report.json", h.publisher, "", nil)
	if !json.Valid(report) {
		t.Fatalf("report: %s", report)
	}
	tmp := os.TempDir()
	for what, text := range map[string]string{"reason": string(body), "report": string(report)} {
		for _, server := range []string{tmp, repoRoot(t), "/root/", "/home/"} {
			if strings.Contains(text, server) {
				t.Errorf("the %s names the server path %s:\n%s", what, server, text)
			}
		}
	}
}
