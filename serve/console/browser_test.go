package console_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/flowgen-dev/flowgen/internal/browsertest"
)

// TestConsoleInABrowser loads the console's pages in chromium on both
// stores: it signs in, filters the jobs to those waiting, opens one,
// approves its checkpoint through the confirmation page and sees the job
// finish; every page passes the accessibility smoke check, and the job
// page and flow graph are saved as screenshots.
func TestConsoleInABrowser(t *testing.T) {
	for _, st := range stores {
		t.Run(st.name, func(t *testing.T) {
			r := newRig(t, st.open(t))
			job := r.start(order{Order: "o-7", Email: "cy@example.com"})
			r.awaitWaiting(job)
			done := r.start(order{Order: "o-8"})
			r.awaitWaiting(done)
			if err := r.engine.Kill(context.Background(), done, "to have a finished job"); err != nil {
				t.Fatal(err)
			}
			ctx := browsertest.New(t)
			dir := browsertest.Artifacts(t, "console")
			run := func(what string, actions ...chromedp.Action) {
				t.Helper()
				if err := chromedp.Run(ctx, actions...); err != nil {
					t.Fatalf("%s: %v", what, err)
				}
			}
			var loc, text string
			run("sign in", chromedp.Navigate(r.srv.URL+"/login?token="+r.token), chromedp.WaitVisible("#f-state", chromedp.ByQuery), chromedp.Location(&loc))
			if !strings.HasSuffix(loc, "/jobs") {
				t.Fatalf("signing in led to %s", loc)
			}
			browsertest.CheckAccessible(t, ctx, "jobs")

			run("filter", chromedp.SetValue("#f-state", "waiting", chromedp.ByQuery), chromedp.Click(`form.filters button[type=submit]`, chromedp.ByQuery))
			loc = browsertest.AwaitLocation(t, ctx, "state=waiting")
			run("read the list", chromedp.WaitVisible("tbody", chromedp.ByQuery), chromedp.Text("tbody", &text, chromedp.ByQuery))
			if !strings.Contains(loc, "state=waiting") || !strings.Contains(text, job.String()) || strings.Contains(text, done.String()) {
				t.Fatalf("filtering by waiting: at %s the list is\n%s", loc, text)
			}

			run("open the job", chromedp.Click(`a[href="/jobs/`+job.String()+`"]`, chromedp.ByQuery), chromedp.WaitVisible("#job-state", chromedp.ByQuery),
				chromedp.Text("main", &text, chromedp.ByQuery))
			if strings.Contains(text, "cy@example.com") || !strings.Contains(text, "[pii.email]") {
				t.Errorf("the job page does not mask the pii email:\n%s", text)
			}
			browsertest.CheckAccessible(t, ctx, "job")
			var shot []byte
			run("screenshot the job", chromedp.FullScreenshot(&shot, 100))
			browsertest.Save(t, dir, st.name+"-job.png", shot)

			run("approve", chromedp.Click(`a[href*="action=approve"]`, chromedp.ByQuery), chromedp.WaitVisible("form.stack", chromedp.ByQuery))
			browsertest.CheckAccessible(t, ctx, "confirm")
			run("confirm", chromedp.SetValue("#note", "fine by the browser test", chromedp.ByQuery), chromedp.Click(`form.stack button[type=submit]`, chromedp.ByQuery),
				chromedp.WaitVisible(".flash", chromedp.ByQuery))
			deadline := time.Now().Add(30 * time.Second)
			for {
				run("read the state", chromedp.Text("#job-state", &text, chromedp.ByQuery))
				if text == "succeeded" {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("the approved job shows %q, not succeeded", text)
				}
				run("reload", chromedp.Sleep(200*time.Millisecond), chromedp.Reload(), chromedp.WaitVisible("#job-state", chromedp.ByQuery))
			}

			run("flows", chromedp.Navigate(r.srv.URL+"/flows"), chromedp.WaitVisible("table", chromedp.ByQuery))
			browsertest.CheckAccessible(t, ctx, "flows")
			run("flow graph", chromedp.Click(`a[href^="/flows/orders"]`, chromedp.ByQuery), chromedp.WaitVisible("figure.graph svg", chromedp.ByQuery))
			var nodes int
			run("count the drawn nodes", chromedp.Evaluate(`document.querySelectorAll("svg g.node").length`, &nodes))
			if nodes != 3 {
				t.Errorf("the graph draws %d nodes, want 3", nodes)
			}
			browsertest.CheckAccessible(t, ctx, "flow")
			run("screenshot the graph", chromedp.Screenshot("figure.graph", &shot, chromedp.ByQuery))
			browsertest.Save(t, dir, st.name+"-flow-graph.png", shot)

			run("dead letters", chromedp.Navigate(r.srv.URL+"/deadletters"), chromedp.WaitVisible("h1", chromedp.ByQuery))
			browsertest.CheckAccessible(t, ctx, "deadletters")
			run("an error page", chromedp.Navigate(r.srv.URL+"/jobs/not-a-job"), chromedp.WaitVisible(".error", chromedp.ByQuery))
			browsertest.CheckAccessible(t, ctx, "error")
		})
	}
}
