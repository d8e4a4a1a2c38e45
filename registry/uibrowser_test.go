package registry_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/flowgen-dev/flowgen/artifact"
	"github.com/flowgen-dev/flowgen/internal/browsertest"
	"github.com/flowgen-dev/flowgen/registry/meta"
)

// TestCataloguePagesInABrowser reads a certified connector through the
// catalogue pages in chromium: sign in with a pull token, search, open
// the version, and check a pasted policy against its evidence; every page
// passes the accessibility smoke check, and the version page is saved as
// a screenshot.
func TestCataloguePagesInABrowser(t *testing.T) {
	o := diskStores(t)
	o.certify = true
	h := newHarness(t, o)
	a, err := artifact.Build("../examples/connectors/charge", artifact.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if code, body := h.publish(h.publisher, "payments", a); code != http.StatusAccepted {
		t.Fatalf("publish: %d %s", code, body)
	}
	if v := h.waitFor("payments", "payments.charge", "2.1.0"); v.State != meta.Certified {
		t.Fatalf("not certified: %s", v.Reason)
	}
	ctx := browsertest.New(t)
	run := func(what string, actions ...chromedp.Action) {
		t.Helper()
		if err := chromedp.Run(ctx, actions...); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	run("open", chromedp.Navigate(h.url+"/ui/"), chromedp.WaitVisible("#token", chromedp.ByQuery))
	browsertest.AwaitLocation(t, ctx, "/ui/login")
	browsertest.CheckAccessible(t, ctx, "login")
	run("sign in", chromedp.SetValue("#token", h.puller, chromedp.ByQuery), chromedp.Click(`form.stack button[type=submit]`, chromedp.ByQuery),
		chromedp.WaitVisible("#s-q", chromedp.ByQuery))
	browsertest.CheckAccessible(t, ctx, "search")
	run("search", chromedp.SetValue("#s-q", "charge", chromedp.ByQuery), chromedp.Click(`form.filters button[type=submit]`, chromedp.ByQuery))
	browsertest.AwaitLocation(t, ctx, "q=charge")
	run("open the version", chromedp.WaitVisible(`a[href$="/versions/2.1.0"]`, chromedp.ByQuery), chromedp.Click(`a[href$="/versions/2.1.0"]`, chromedp.ByQuery),
		chromedp.WaitVisible("#version-state", chromedp.ByQuery))
	browsertest.CheckAccessible(t, ctx, "version")
	var shot []byte
	run("screenshot", chromedp.FullScreenshot(&shot, 100))
	browsertest.Save(t, browsertest.Artifacts(t, "registry"), "version.png", shot)
	var verdict string
	run("check a policy", chromedp.SetValue("#policy-text", "apiVersion: flowgen.dev/v1\nkind: PullPolicy\nmaxEffects: ReadOnly\n", chromedp.ByQuery),
		chromedp.Click(`form[action$="/policy"] button[type=submit]`, chromedp.ByQuery),
		chromedp.WaitVisible("#policy-verdict", chromedp.ByQuery), chromedp.Text("#policy-verdict", &verdict, chromedp.ByQuery))
	if !strings.Contains(verdict, "Refused by 1 rule") || !strings.Contains(verdict, "Effectful") {
		t.Errorf("the policy verdict: %q", verdict)
	}
	run("connector page", chromedp.Navigate(h.url+"/ui/connectors/payments/payments.charge"), chromedp.WaitVisible("table", chromedp.ByQuery))
	browsertest.CheckAccessible(t, ctx, "connector")

	// The publisher is offered the yank, confirmed on a page of its own.
	run("sign in as the publisher", chromedp.Navigate(h.url+"/ui/login"), chromedp.WaitVisible("#token", chromedp.ByQuery),
		chromedp.SetValue("#token", h.publisher, chromedp.ByQuery), chromedp.Click(`form.stack button[type=submit]`, chromedp.ByQuery),
		chromedp.WaitVisible("#s-q", chromedp.ByQuery))
	run("yank", chromedp.Navigate(h.url+"/ui/connectors/payments/payments.charge/versions/2.1.0"), chromedp.WaitVisible(`a[href$="action=yank"]`, chromedp.ByQuery),
		chromedp.Click(`a[href$="action=yank"]`, chromedp.ByQuery), chromedp.WaitVisible("#reason", chromedp.ByQuery))
	browsertest.CheckAccessible(t, ctx, "confirm")
	run("confirm", chromedp.SetValue("#reason", "double charges", chromedp.ByQuery), chromedp.Click(`form.stack button[type=submit]`, chromedp.ByQuery),
		chromedp.WaitVisible(".flash", chromedp.ByQuery), chromedp.Text("main", &verdict, chromedp.ByQuery))
	if !strings.Contains(verdict, "Yanked: double charges") {
		t.Errorf("after the yank the page says:\n%s", verdict)
	}
}
