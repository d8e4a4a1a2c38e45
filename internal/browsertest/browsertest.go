// Package browsertest drives Debian's chromium (installed by
// .ci/chromium.sh) through the DevTools protocol (chromedp) for the web
// pages' end-to-end tests: it starts a headless browser, runs the
// accessibility smoke check every page must pass, and saves screenshots
// under FLOWGEN_ARTIFACTS (default .artifacts at the repository root,
// which git ignores).
package browsertest

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

// chromium finds the browser: $FLOWGEN_CHROMIUM, else chromium on PATH.
// Outside CI a machine without it skips the browser tests; in CI it is a
// failure.
func chromium(t testing.TB) string {
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

// Artifacts is the directory screenshots of the tests of sub go to.
func Artifacts(t testing.TB, sub string) string {
	t.Helper()
	dir := os.Getenv("FLOWGEN_ARTIFACTS")
	if dir == "" {
		dir = filepath.Join(repoRoot(t), ".artifacts")
	}
	dir = filepath.Join(dir, sub)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// New starts a headless chromium for the test and returns its context;
// the browser stops when the test ends.
func New(t testing.TB) context.Context {
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
		// On a busy machine (CI runs test binaries side by side, each
		// with browsers) chromium can take longer than chromedp's 20 s
		// to say where its DevTools listen; the test's own budget below
		// bounds the wait.
		chromedp.WSURLReadTimeout(90*time.Second),
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

// CheckAccessible runs the smoke check on the page the browser shows:
// the structural problems, then a keyboard walk that must reach every
// focusable element, each with a visible focus outline.
func CheckAccessible(t testing.TB, ctx context.Context, page string) {
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

// AwaitLocation waits until the browser's address contains want and
// returns it.
func AwaitLocation(t testing.TB, ctx context.Context, want string) string {
	t.Helper()
	var loc string
	var err error
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); {
		// Asked while the page navigates, the browser may answer that the
		// page it inspected is gone (-32000): not there yet, ask again.
		if err = chromedp.Run(ctx, chromedp.Location(&loc)); err == nil && strings.Contains(loc, want) {
			return loc
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("the browser is at %s, not at an address with %s (last error: %v)", loc, want, err)
	return ""
}

// Save writes a PNG screenshot into dir.
func Save(t testing.TB, dir, name string, png []byte) {
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

// repoRoot is the module root above the working directory.
func repoRoot(t testing.TB) string {
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			return d
		}
		if filepath.Dir(d) == d {
			return dir
		}
	}
}
