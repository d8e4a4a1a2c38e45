package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/flowgen-dev/flowgen/diag"
)

var update = flag.Bool("update", false, "rewrite want.txt files under testdata/invalid")

const invalidDir = "../../testdata/invalid"

// caseDiagnostics runs flowgen validate --format json on one case directory
// and renders each diagnostic as "file:line:col: severity CODE" with paths
// relative to the case.
func caseDiagnostics(t *testing.T, dir string) (lines []string, exit int, codes []string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	exit = Run(context.Background(), []string{"validate", "--format", "json", dir}, os.Getenv, nil, &stdout, &stderr)
	sc := bufio.NewScanner(&stdout)
	for sc.Scan() {
		var d struct {
			File, Severity, Code, Message, Fix string
			Line, Col                          int
		}
		if err := json.Unmarshal(sc.Bytes(), &d); err != nil {
			t.Fatalf("bad JSON line %q: %v", sc.Text(), err)
		}
		if d.Message == "" || d.Fix == "" {
			t.Errorf("%s: diagnostic without a message or fix: %s", dir, sc.Text())
		}
		file := strings.TrimPrefix(filepath.ToSlash(d.File), filepath.ToSlash(dir)+"/")
		lines = append(lines, fmt.Sprintf("%s:%d:%d: %s %s", file, d.Line, d.Col, d.Severity, d.Code))
		codes = append(codes, d.Code)
	}
	if exit == exitUsage {
		t.Fatalf("%s: usage error: %s", dir, stderr.String())
	}
	return lines, exit, codes
}

// TestInvalidCases checks that every case under testdata/invalid reports
// exactly the diagnostics in its want.txt, at the exact positions, and that
// the code the case is named after is among them.
func TestInvalidCases(t *testing.T) {
	t.Parallel()
	entries, err := os.ReadDir(invalidDir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		t.Run(e.Name(), func(t *testing.T) {
			dir := filepath.Join(invalidDir, e.Name())
			lines, exit, codes := caseDiagnostics(t, dir)
			got := strings.Join(lines, "\n") + "\n"
			wantFile := filepath.Join(dir, "want.txt")
			if *update {
				if err := os.WriteFile(wantFile, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(wantFile)
			if err != nil {
				t.Fatal(err)
			}
			if got != string(want) {
				t.Errorf("diagnostics differ\n got:\n%s\nwant:\n%s", got, want)
			}
			code, _, _ := strings.Cut(e.Name(), "-")
			if !slices.Contains(codes, code) {
				t.Errorf("case named after %s does not report it (got %v)", code, codes)
			}
			wantExit := exitOK
			if slices.ContainsFunc(lines, func(l string) bool { return strings.Contains(l, ": error ") }) {
				wantExit = exitProblems
			}
			if exit != wantExit {
				t.Errorf("exit status %d, want %d", exit, wantExit)
			}
		})
	}
}

// TestEveryCodeHasAnInvalidCase keeps the corpus complete as codes are added.
func TestEveryCodeHasAnInvalidCase(t *testing.T) {
	t.Parallel()
	entries, err := os.ReadDir(invalidDir)
	if err != nil {
		t.Fatal(err)
	}
	have := map[string]bool{}
	for _, e := range entries {
		code, _, _ := strings.Cut(e.Name(), "-")
		have[code] = true
	}
	for _, info := range diag.Codes {
		if !have[string(info.Code)] {
			t.Errorf("no case under testdata/invalid for %s (%s)", info.Code, info.Title)
		}
	}
}
