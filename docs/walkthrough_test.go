package docs

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/flowgen-dev/flowgen/runtime/store/pgstore/pgtest"
)

// A shell block in the documentation is preceded by one of these
// comments: a walkthrough's name (blocks of one name in one file run as
// one script, in order), or why it is not run.
var (
	testMark    = regexp.MustCompile(`^<!-- test: ([a-z0-9-]+) -->$`)
	notTestMark = regexp.MustCompile(`^<!-- not tested( here)?: (.+) -->$`)
)

// walkthrough is the shell blocks of one name in one document.
type walkthrough struct {
	file, name string
	line       int // of the first block
	script     strings.Builder
}

// documents lists README.md and docs/*.md, relative to the checkout.
func documents(t *testing.T) []string {
	docs, err := filepath.Glob("*.md")
	if err != nil {
		t.Fatal(err)
	}
	for i, d := range docs {
		docs[i] = filepath.Join("docs", d)
	}
	sort.Strings(docs)
	return append([]string{"README.md"}, docs...)
}

// walkthroughs reads every document's shell blocks; a block without a
// mark is an error at its line.
func walkthroughs(t *testing.T, root string) []*walkthrough {
	var out []*walkthrough
	byKey := map[string]*walkthrough{}
	for _, doc := range documents(t) {
		data, err := os.ReadFile(filepath.Join(root, doc))
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(bytes.NewReader(data))
		prev, n := "", 0
		var cur *walkthrough
		inBlock, skipping := false, false
		for sc.Scan() {
			n++
			line := sc.Text()
			switch {
			case !inBlock && strings.HasPrefix(line, "```sh"):
				inBlock = true
				if m := testMark.FindStringSubmatch(prev); m != nil {
					key := doc + "/" + m[1]
					if cur = byKey[key]; cur == nil {
						cur = &walkthrough{file: doc, name: m[1], line: n}
						byKey[key] = cur
						out = append(out, cur)
					}
					fmt.Fprintf(&cur.script, "# %s:%d\n", doc, n)
				} else if notTestMark.MatchString(prev) {
					skipping = true
				} else {
					t.Errorf("%s:%d: a shell block needs <!-- test: NAME --> or <!-- not tested: REASON --> on the line before", doc, n)
					skipping = true
				}
			case inBlock && strings.HasPrefix(line, "```"):
				inBlock, skipping, cur = false, false, nil
			case inBlock && !skipping:
				cur.script.WriteString(line + "\n")
			}
			prev = line
		}
	}
	return out
}

// TestDocumentsMarkEveryShellBlock: no command in the documents escapes
// the walkthrough test unnoticed.
func TestDocumentsMarkEveryShellBlock(t *testing.T) {
	if len(walkthroughs(t, "..")) < 3 {
		t.Error("fewer than 3 walkthroughs found: the README tour, from-checkout and first-connector")
	}
}

// TestWalkthroughs runs each walkthrough with bash (-e, -u, pipefail) in a
// copy of the checkout, with DATABASE_URL naming a fresh PostgreSQL
// schema; background processes it starts are stopped at its end.
func TestWalkthroughs(t *testing.T) {
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	files := checkoutFiles(t, root)
	for _, w := range walkthroughs(t, root) {
		t.Run(strings.TrimSuffix(filepath.Base(w.file), ".md")+"/"+w.name, func(t *testing.T) {
			t.Parallel() // each has its own copy, schema, ports and pull directory
			dir := t.TempDir()
			copyCheckout(t, root, dir, files)
			script := "set -euo pipefail\n" + w.script.String()
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, "bash", "-c", script)
			cmd.Dir = dir
			cmd.Env = append(os.Environ(), "DATABASE_URL="+pgtest.FreshSchema(t), "FLOWGEN_CHECKOUT="+dir,
				"GOFLAGS=-trimpath", "GOWORK=off", "FLOWGEN_REGISTRY=", "FLOWGEN_REGISTRY_TOKEN=", "FLOWGEN_STORE=",
				"FLOWGEN_PULL_DIR="+filepath.Join(dir, ".flowgen-modules"))
			cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
			cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
			// A file, not a pipe: background processes keep their copy of
			// the output open, and Wait would wait for them.
			out, err := os.Create(filepath.Join(t.TempDir(), "output"))
			if err != nil {
				t.Fatal(err)
			}
			defer out.Close()
			cmd.Stdout, cmd.Stderr = out, out
			err = cmd.Start()
			if err == nil {
				err = cmd.Wait()
			}
			// Whatever the walkthrough left running in the background.
			if cmd.Process != nil {
				syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
				time.Sleep(500 * time.Millisecond)
				syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			}
			output, _ := os.ReadFile(out.Name())
			if err != nil {
				t.Fatalf("%s:%d: walkthrough %s: %v\n%s", w.file, w.line, w.name, err, output)
			}
			if testing.Verbose() {
				t.Logf("%s", output)
			}
		})
	}
}

// checkoutFiles lists the files a clone has: tracked ones and new ones
// not ignored.
func checkoutFiles(t *testing.T, root string) []string {
	out, err := exec.Command("git", "-C", root, "ls-files", "-z", "--cached", "--others", "--exclude-standard").Output()
	if err != nil {
		t.Fatalf("git ls-files: %v", err)
	}
	var files []string
	for _, f := range strings.Split(string(out), "\x00") {
		if f != "" {
			files = append(files, f)
		}
	}
	return files
}

func copyCheckout(t *testing.T, root, dir string, files []string) {
	t.Helper()
	for _, f := range files {
		src := filepath.Join(root, f)
		info, err := os.Lstat(src)
		if err != nil || !info.Mode().IsRegular() {
			continue // deleted in the working tree, or not a file
		}
		data, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		dst := filepath.Join(dir, f)
		os.MkdirAll(filepath.Dir(dst), 0o755)
		if err := os.WriteFile(dst, data, info.Mode().Perm()); err != nil {
			t.Fatal(err)
		}
	}
}
