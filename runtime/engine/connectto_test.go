package engine

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/flowgen-dev/flowgen/runtime"
)

// TestConnectToRedirectsOnlyAllowedHosts: a route sends api.stripe.com's
// traffic to a local server, keeping path, query and Host; egress is still
// judged on the host the connector named, so a route cannot open a host
// the allowlist refuses.
func TestConnectToRedirectsOnlyAllowedHosts(t *testing.T) {
	t.Parallel()
	var got []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		got = append(got, r.Method+" "+r.Host+r.URL.RequestURI()+" "+string(body))
		io.WriteString(w, `{"id":"ch_local"}`)
	}))
	defer srv.Close()
	routes, err := ParseConnectTo("api.stripe.com=" + srv.URL + ", evil.example=" + srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	h := NewHTTP(&ConnectTo{Routes: routes}, []string{"api.stripe.com"})
	ctx := context.Background()
	resp, err := h.Do(ctx, "POST", "https://api.stripe.com/v1/charges?x=1", nil, []byte("amount=1"))
	if err != nil || string(resp.Body) != `{"id":"ch_local"}` {
		t.Fatalf("%v %v", resp, err)
	}
	if len(got) != 1 || got[0] != "POST api.stripe.com/v1/charges?x=1 amount=1" {
		t.Fatalf("the stand-in saw %q", got)
	}
	if _, err := h.Get(ctx, "https://evil.example/", nil); runtime.KindOf(err) != runtime.PolicyDenied {
		t.Fatalf("a route opened a host outside the allowlist: %v", err)
	}
	for _, bad := range []string{"api.stripe.com", "api.stripe.com=ftp://x", "*.x.com=http://127.0.0.1:1", "a.com=http://127.0.0.1:1/path", "=http://127.0.0.1:1"} {
		if _, err := ParseConnectTo(bad); err == nil || !strings.Contains(err.Error(), "connect-to") {
			t.Errorf("%q: %v", bad, err)
		}
	}
}
