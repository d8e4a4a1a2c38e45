package registry_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/flowgen-dev/flowgen/registry/api"
)

// TestAdminAPI: tokens are created, listed (without their hashes) and
// revoked through the API while the server runs, a revoked token stops
// working at once, garbage collection runs dry, and none of it is open to
// tokens without the admin scope.
func TestAdminAPI(t *testing.T) {
	t.Parallel()
	h := newHarness(t, diskStores(t))
	post := func(tok, path string, v any) (int, []byte) {
		b, _ := json.Marshal(v)
		return h.do("POST", path, tok, "application/json", bytes.NewReader(b))
	}
	code, body := post(h.admin, "/v1/admin/tokens", api.TokenRequest{Name: "ci-orders", Scopes: []string{"publish:orders"}, ExpiresIn: "1h"})
	var created api.TokenCreated
	if code != http.StatusCreated || json.Unmarshal(body, &created) != nil || created.Secret == "" || created.Expires.IsZero() {
		t.Fatalf("create: %d %s", code, body)
	}
	if code, _ := h.do("GET", "/v1/connectors", created.Secret, "", nil); code != http.StatusOK {
		t.Fatalf("the new token does not work: %d", code)
	}
	code, body = h.do("GET", "/v1/admin/tokens", h.admin, "", nil)
	if code != http.StatusOK || !strings.Contains(string(body), created.ID) || strings.Contains(string(body), "hash") || strings.Contains(string(body), created.Secret) {
		t.Fatalf("list: %d %s", code, body)
	}
	if code, body := post(h.admin, "/v1/admin/tokens/"+created.ID+"/revoke", struct{}{}); code != http.StatusOK || !strings.Contains(string(body), `"revoked"`) {
		t.Fatalf("revoke: %d %s", code, body)
	}
	if code, _ := h.do("GET", "/v1/connectors", created.Secret, "", nil); code != http.StatusUnauthorized {
		t.Fatalf("a revoked token still works: %d", code)
	}
	if code, body := post(h.admin, "/v1/admin/gc", api.GCRequest{DryRun: true, Grace: "1ns"}); code != http.StatusOK || !strings.Contains(string(body), `"dry_run": true`) {
		t.Fatalf("gc: %d %s", code, body)
	}
	for _, bad := range []struct {
		tok  string
		want int
	}{{"", http.StatusUnauthorized}, {h.puller, http.StatusForbidden}, {h.publisher, http.StatusForbidden}} {
		if code, _ := post(bad.tok, "/v1/admin/tokens", api.TokenRequest{Name: "x", Scopes: []string{"admin"}}); code != bad.want {
			t.Errorf("create with %q: %d, want %d", bad.tok, code, bad.want)
		}
		if code, _ := h.do("GET", "/v1/admin/tokens", bad.tok, "", nil); code != bad.want {
			t.Errorf("list with %q: %d, want %d", bad.tok, code, bad.want)
		}
	}
	if code, body := post(h.admin, "/v1/admin/tokens", api.TokenRequest{Name: "x", Scopes: []string{"root"}}); code != http.StatusBadRequest {
		t.Errorf("an unknown scope: %d %s", code, body)
	}
}
