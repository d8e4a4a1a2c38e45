package console_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
)

// The browser tests drive Debian's chromium (installed by .ci/chromium.sh)
// through the DevTools protocol. They write screenshots of the job page
// and the flow graph under FLOWGEN_ARTIFACTS (default .artifacts at the
// repository root), which CI keeps.

// chromium finds the browser: $FLOWGEN_CHROMIUM, else chromium on PATH.
// Outside CI a machine without it skips the browser tests; in CI it is a
// failure.
func chromium(t *testing.T) string {
	t.Helper()
	path := os.Getenv("FLOWGEN_CHROMIUM")
	if path == "" {
		var err error
		if path, err = exec.LookPath("chromium"); err != nil {
			if os.Getenv("CI") != "" {
				t.Fatal("chromium is not installed (.ci/chromium.sh installs it)")
			}
			t.Skip("chromium is not installed: sudo apt-get install chromium")
		}
	}
	return path
}

// artifacts is the directory screenshots go to.
func artifacts(t *testing.T) string {
	t.Helper()
	dir := os.Getenv("FLOWGEN_ARTIFACTS")
	if dir == "" {
		dir = filepath.Join("..", "..", ".artifacts")
	}
	dir = filepath.Join(dir, "console")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// newBrowser starts a headless chromium for the test.
func newBrowser(t *testing.T) context.Context {
	t.Helper()
	// Not t.TempDir: the browser's helpers may still write to their
	// profile while it is removed.
	profile, err := os.MkdirTemp("", "flowgen-chromium-")
	if err != nil {
		t.Fatal(err)
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromium(t)),
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.UserDataDir(profile),
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.WindowSize(1280, 900),
	)
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelCtx := chromedp.NewContext(actx)
	ctx, cancelTimeout := context.WithTimeout(ctx, 90*time.Second)
	t.Cleanup(func() {
		cancelTimeout()
		cancelCtx()
		cancelAlloc()
		for range 50 {
			if os.RemoveAll(profile) == nil {
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
	})
	if err := chromedp.Run(ctx); err != nil { // starts the browser
		t.Fatalf("start chromium: %v", err)
	}
	return ctx
}

// a11yProblems is run in the page: the accessibility smoke check. It
// returns what it found wrong: not exactly one h1, a heading level
// skipped, a form field without a label, a link or button without a
// name, an image or drawing without a text alternative, no main
// landmark, no language or title.
const a11yProblems = `(() => {
  const p = [];
  const h1 = document.querySelectorAll("h1");
  if (h1.length !== 1) p.push(h1.length + " h1 elements");
  let last = 0;
  document.querySelectorAll("h1,h2,h3,h4,h5,h6").forEach(h => {
    const l = +h.tagName[1];
    if (last && l > last + 1) p.push("heading " + h.tagName + " '" + h.textContent.trim() + "' skips a level");
    last = l;
  });
  document.querySelectorAll("input:not([type=hidden]),select,textarea").forEach(el => {
    if (!((el.labels && el.labels.length) || el.getAttribute("aria-label") || el.getAttribute("aria-labelledby")))
      p.push("field " + (el.name || el.id) + " has no label");
  });
  document.querySelectorAll("a,button").forEach(el => {
    if (!(el.textContent.trim() || el.getAttribute("aria-label"))) p.push(el.tagName + " without a name");
  });
  document.querySelectorAll("img").forEach(i => { if (!i.hasAttribute("alt")) p.push("img without alt"); });
  document.querySelectorAll("svg").forEach(s => {
    if (!(s.getAttribute("aria-labelledby") || s.getAttribute("aria-label"))) p.push("svg without a name");
  });
  if (!document.querySelector("main")) p.push("no main landmark");
  if (!document.documentElement.lang) p.push("no lang");
  if (!document.title) p.push("no title");
  return p;
})()`

// focusables counts what the keyboard should reach on the page.
const focusables = `document.querySelectorAll(` + focusable + `).length`

const focusable = `"a[href],button,input:not([type=hidden]),select,textarea,summary"`

// focused describes, by its place among the focusable ones, the element with the keyboard focus and whether it
// shows a focus outline.
const focused = `(() => {
  const el = document.activeElement;
  if (!el || el === document.body) return "";
  const s = getComputedStyle(el);
  return Array.from(document.querySelectorAll(` + focusable + `)).indexOf(el) + "|" + el.tagName + "|" + (el.id || el.getAttribute("href") || el.name || el.textContent.trim().slice(0, 30)) + "|outline=" + (s.outlineStyle !== "none" && s.outlineWidth !== "0px");
})()`

// checkAccessible runs the smoke check on the page the browser shows:
// the structural problems, then a keyboard walk that must reach every
// focusable element, each with a visible focus outline.
func checkAccessible(t *testing.T, ctx context.Context, page string) {
	t.Helper()
	var problems []string
	var n int
	if err := chromedp.Run(ctx, chromedp.Evaluate(a11yProblems, &problems), chromedp.Evaluate(focusables, &n)); err != nil {
		t.Fatalf("%s: %v", page, err)
	}
	for _, p := range problems {
		t.Errorf("%s: accessibility: %s", page, p)
	}
	// A date field takes a Tab per part (month, day, year, time), so the
	// walk goes on until every element was reached or 4 tabs each.
	outlined := map[string]bool{} // element: seen with its outline
	for i := 0; i < 4*n && len(outlined) < n; i++ {
		var f string
		if err := chromedp.Run(ctx, chromedp.KeyEvent(kb.Tab), chromedp.Evaluate(focused, &f)); err != nil {
			t.Fatalf("%s: tab: %v", page, err)
		}
		if f == "" {
			continue
		}
		el, shown, _ := strings.Cut(f, "|outline=")
		outlined[el] = outlined[el] || shown == "true"
	}
	for el, shown := range outlined {
		if !shown {
			t.Errorf("%s: keyboard focus on %s shows no outline", page, el)
		}
	}
	if len(outlined) < n {
		t.Errorf("%s: the keyboard reached %d of %d focusable elements: %v", page, len(outlined), n, outlined)
	}
}

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
			ctx := newBrowser(t)
			dir := artifacts(t)
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
			checkAccessible(t, ctx, "jobs")

			run("filter", chromedp.SetValue("#f-state", "waiting", chromedp.ByQuery), chromedp.Click(`form.filters button[type=submit]`, chromedp.ByQuery))
			loc = awaitLocation(t, ctx, "state=waiting")
			run("read the list", chromedp.WaitVisible("tbody", chromedp.ByQuery), chromedp.Text("tbody", &text, chromedp.ByQuery))
			if !strings.Contains(loc, "state=waiting") || !strings.Contains(text, job.String()) || strings.Contains(text, done.String()) {
				t.Fatalf("filtering by waiting: at %s the list is\n%s", loc, text)
			}

			run("open the job", chromedp.Click(`a[href="/jobs/`+job.String()+`"]`, chromedp.ByQuery), chromedp.WaitVisible("#job-state", chromedp.ByQuery),
				chromedp.Text("main", &text, chromedp.ByQuery))
			if strings.Contains(text, "cy@example.com") || !strings.Contains(text, "[pii.email]") {
				t.Errorf("the job page does not mask the pii email:\n%s", text)
			}
			checkAccessible(t, ctx, "job")
			var shot []byte
			run("screenshot the job", chromedp.FullScreenshot(&shot, 100))
			save(t, dir, st.name+"-job.png", shot)

			run("approve", chromedp.Click(`a[href*="action=approve"]`, chromedp.ByQuery), chromedp.WaitVisible("form.stack", chromedp.ByQuery))
			checkAccessible(t, ctx, "confirm")
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
			checkAccessible(t, ctx, "flows")
			run("flow graph", chromedp.Click(`a[href^="/flows/orders"]`, chromedp.ByQuery), chromedp.WaitVisible("figure.graph svg", chromedp.ByQuery))
			var nodes int
			run("count the drawn nodes", chromedp.Evaluate(`document.querySelectorAll("svg g.node").length`, &nodes))
			if nodes != 3 {
				t.Errorf("the graph draws %d nodes, want 3", nodes)
			}
			checkAccessible(t, ctx, "flow")
			run("screenshot the graph", chromedp.Screenshot("figure.graph", &shot, chromedp.ByQuery))
			save(t, dir, st.name+"-flow-graph.png", shot)

			run("dead letters", chromedp.Navigate(r.srv.URL+"/deadletters"), chromedp.WaitVisible("h1", chromedp.ByQuery))
			checkAccessible(t, ctx, "deadletters")
		})
	}
}

// awaitLocation waits until the browser's address contains want and
// returns it.
func awaitLocation(t *testing.T, ctx context.Context, want string) string {
	t.Helper()
	var loc string
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); {
		if err := chromedp.Run(ctx, chromedp.Location(&loc)); err != nil {
			t.Fatal(err)
		}
		if strings.Contains(loc, want) {
			return loc
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("the browser is at %s, not at an address with %s", loc, want)
	return ""
}

func save(t *testing.T, dir, name string, png []byte) {
	t.Helper()
	if len(png) < 1000 {
		t.Fatalf("screenshot %s is %d bytes", name, len(png))
	}
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot: %s", path)
}
