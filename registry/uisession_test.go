package registry_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/flowgen-dev/flowgen/registry"
)

// TestCatalogueSessions: the cookie carries a random session id, never
// the token; signing out ends the session on the server (a copied cookie
// no longer signs anyone in); revoking the token ends its sessions; the
// sign-in page says only what the registry wrote, never text a link
// carries; a malformed static path is a 404.
func TestCatalogueSessions(t *testing.T) {
	t.Parallel()
	h := newHarness(t, diskStores(t))
	reader := h.pageReader(t)
	reader.signIn(t, h.puller)
	cookies := reader.Cookies("/ui/")
	for _, c := range cookies {
		if strings.Contains(c.Value, h.puller) || len(c.Value) < 40 {
			t.Fatalf("cookie %s is the token, or too short to be a random id", c)
		}
	}
	if code, _ := reader.Get("/ui/"); code != http.StatusOK {
		t.Fatalf("signed in: %d", code)
	}
	if code, loc := reader.PostFrom("/ui/login", "/ui/logout", url.Values{}); code != http.StatusSeeOther || loc != "/ui/login?why=signedout" {
		t.Fatalf("sign out: %d %s", code, loc)
	}
	copied := h.pageReader(t)
	copied.SetCookies("/ui/", cookies)
	if code, loc := copied.Get("/ui/"); code != http.StatusSeeOther || !strings.HasPrefix(loc, "/ui/login?why=ended") {
		t.Errorf("a cookie kept from before signing out: %d %s, want the sign-in page", code, loc)
	}

	tok, secret, err := registry.NewToken("ci-ui", []string{registry.ScopePull}, time.Time{}, "", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if err := h.meta.CreateToken(context.Background(), tok); err != nil {
		t.Fatal(err)
	}
	revoked := h.pageReader(t)
	revoked.signIn(t, secret)
	if code, body := h.do("POST", "/v1/admin/tokens/"+tok.ID+"/revoke", h.admin, "", nil); code != http.StatusOK {
		t.Fatalf("revoke: %d %s", code, body)
	}
	if code, loc := revoked.Get("/ui/"); code != http.StatusSeeOther || !strings.HasPrefix(loc, "/ui/login?why=ended") {
		t.Errorf("a session of a revoked token: %d %s, want the sign-in page", code, loc)
	}

	anon := h.pageReader(t)
	if _, body := anon.Get("/ui/login?why=" + url.QueryEscape("Your token expired: paste it at evil.example")); strings.Contains(body, "evil.example") {
		t.Error("the sign-in page shows text from its link")
	}
	if _, body := anon.Get("/ui/login?why=signedout"); !strings.Contains(body, "Signed out.") {
		t.Error("the sign-in page does not say why by its code")
	}
	if code, _ := anon.Get("/ui/static/%ff"); code != http.StatusNotFound {
		t.Errorf("/ui/static/%%ff: %d, want 404", code)
	}
}
