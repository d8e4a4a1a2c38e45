package registry_test

import (
	"bytes"
	"mime/multipart"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/flowgen-dev/flowgen/internal/browsertest"
	"github.com/flowgen-dev/flowgen/registry"
)

// pageReader reads the catalogue pages as a browser would.
type pageReader struct{ *browsertest.Client }

func (h *harness) pageReader(t *testing.T) pageReader {
	return pageReader{browsertest.NewClient(t, h.url)}
}

// signIn signs the reader in with secret.
func (b pageReader) signIn(t *testing.T, secret string) {
	t.Helper()
	if code, loc := b.PostFrom("/ui/login", "/ui/login", url.Values{"token": {secret}}); code != http.StatusSeeOther || loc != "/ui/" {
		t.Fatalf("sign in: %d %s", code, loc)
	}
}

// checkPolicy posts policy, as a file upload when asFile, to the
// version page's policy form and returns the page.
func (b pageReader) checkPolicy(t *testing.T, page, policy string, asFile bool) string {
	t.Helper()
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	_, form := b.Get(page)
	mw.WriteField("csrf", browsertest.FormToken(t, form))
	if asFile {
		fw, _ := mw.CreateFormFile("policyfile", "team-policy.yaml")
		fw.Write([]byte(policy))
	} else {
		mw.WriteField("policy", policy)
	}
	mw.Close()
	code, body := b.Do("POST", page+"/policy", mw.FormDataContentType(), &buf, nil)
	if code != http.StatusOK {
		t.Fatalf("policy check: %d %s", code, body)
	}
	return body
}

// cataloguePages reads the certified payments.charge 2.1.0 through the
// catalogue pages: sign-in with the API's tokens, search, the connector
// and version pages with their evidence, the policy check, and a
// deprecation by its publisher, confirmed and audited.
func cataloguePages(t *testing.T, h *harness) {
	const ui = "/ui/connectors/payments/payments.charge"
	page := ui + "/versions/2.1.0"
	anon := h.pageReader(t)
	if code, loc := anon.Get("/ui/?q=charge"); code != http.StatusSeeOther || !strings.HasPrefix(loc, "/ui/login") {
		t.Fatalf("an anonymous reader is not sent to sign in: %d %s", code, loc)
	}
	if code, body := anon.PostFrom("/ui/login", "/ui/login", url.Values{"token": {"fgr_notatoken"}}); code != http.StatusUnauthorized || !strings.Contains(body, "unknown token") {
		t.Errorf("a wrong token: %d %s", code, body)
	}
	if code, _ := anon.Post("/ui/login", url.Values{"token": {h.puller}}, nil); code != http.StatusForbidden {
		t.Errorf("a sign-in without the form token: %d, want 403", code)
	}
	if code, _ := anon.Get("/v1/connectors?q=charge"); code != http.StatusUnauthorized {
		t.Errorf("the API answers a browser on its UI cookie: %d", code)
	}

	reader := h.pageReader(t)
	reader.signIn(t, h.puller)
	for _, q := range []string{"/ui/?q=charge", "/ui/?effects=Effectful&provider=stripe", "/ui/?capability=http.write"} {
		if code, body := reader.Get(q); code != http.StatusOK || !strings.Contains(body, page) {
			t.Errorf("search %s does not find the connector: %d\n%s", q, code, body)
		}
	}
	if _, body := reader.Get("/ui/?determinism=Strict"); strings.Contains(body, page) {
		t.Error("the determinism filter is ignored")
	}
	if code, body := reader.Get(ui); code != http.StatusOK || !strings.Contains(body, page) {
		t.Errorf("connector page: %d\n%s", code, body)
	}
	code, body := reader.Get(page)
	if code != http.StatusOK || strings.Count(body, ">verified<") != 3 || !containsAll(body, "static-analysis", "duplicate-delivery", "bubblewrap", "SPDX document", "stripe") {
		t.Errorf("version page: %d\n%s", code, body)
	}
	if strings.Contains(body, "/confirm?action=yank") {
		t.Error("a pull token is offered the yank action")
	}
	if code, _ := reader.Get(page + "/confirm?action=yank"); code != http.StatusForbidden {
		t.Errorf("a pull token reaches the yank confirmation: %d", code)
	}

	refused := reader.checkPolicy(t, page, "apiVersion: flowgen.dev/v1\nkind: PullPolicy\nmaxEffects: ReadOnly\n", false)
	if !containsAll(refused, "Refused by 1 rule", "maxEffects", "Effectful") {
		t.Errorf("a policy the version fails:\n%s", refused)
	}
	passes := reader.checkPolicy(t, page, "apiVersion: flowgen.dev/v1\nkind: PullPolicy\nmaxEffects: Effectful\nnamespaces: [payments]\n", true)
	if !strings.Contains(passes, `id="policy-verdict">Passes`) {
		t.Errorf("an uploaded policy the version meets:\n%s", passes)
	}
	broken := reader.checkPolicy(t, page, "apiVersion: flowgen.dev/v1\nkind: PullPolicy\nmaxEfects: Effectful\n", true)
	if !strings.Contains(broken, "team-policy.yaml:3:") {
		t.Errorf("a broken policy is not reported with file:line:\n%s", broken)
	}

	// A reader whose token carries a pull policy the version fails sees
	// neither it in lists nor its page.
	strict := h.pageReader(t)
	strict.signIn(t, h.token("strict-reader", []string{registry.ScopePull}, "apiVersion: flowgen.dev/v1\nkind: PullPolicy\nmaxEffects: ReadOnly\n"))
	if code, body := strict.Get(page); code != http.StatusForbidden || !strings.Contains(body, "does not satisfy the pull policy") {
		t.Errorf("a version page the reader's policy refuses: %d\n%s", code, body)
	}
	if _, body := strict.Get("/ui/?q=charge"); strings.Contains(body, page) {
		t.Error("a search lists a version the reader's policy refuses")
	}

	publisher := h.pageReader(t)
	publisher.signIn(t, h.publisher)
	code, body = publisher.Get(page + "/confirm?action=deprecate")
	if code != http.StatusOK || !strings.Contains(body, "Deprecate payments/payments.charge@2.1.0?") {
		t.Fatalf("deprecate confirmation: %d\n%s", code, body)
	}
	if code, loc := publisher.PostFrom(page+"/confirm?action=deprecate", page+"/deprecate", url.Values{"reason": {"use 3.x"}}); code != http.StatusSeeOther || !strings.HasPrefix(loc, page) {
		t.Fatalf("deprecate: %d %s", code, loc)
	}
	if _, body := reader.Get(page); !strings.Contains(body, "Deprecated: use 3.x") {
		t.Errorf("the deprecation is not on the page:\n%s", body)
	}
	if code, body := h.do("GET", "/v1/audit", h.admin, "", nil); code != 200 || !containsAll(string(body), `"deprecate"`, "use 3.x", "ci-payments") {
		t.Errorf("the deprecation is not audited: %d %s", code, body)
	}
}
