package api

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestEveryCodeInTheTable checks each code constant has a row with a real
// status and a meaning, so no code travels without its status.
func TestEveryCodeInTheTable(t *testing.T) {
	src, err := os.ReadFile("errors.go")
	if err != nil {
		t.Fatal(err)
	}
	decl := regexp.MustCompile(`(?m)^\s+(Code\w+)\s+ErrorCode = "(\w+)"`)
	for _, m := range decl.FindAllStringSubmatch(string(src), -1) {
		c := ErrorCode(m[2])
		if c == CodeHTTP {
			continue // the client's code for a foreign answer
		}
		info, ok := codes[c]
		if !ok || http.StatusText(info.status) == "" || info.meaning == "" {
			t.Errorf("%s (%q) has no complete row in the table", m[1], c)
		}
	}
	if got := CodeNotFound.Errorf("no %s", "x"); got.Status != http.StatusNotFound || got.Error() != "404 not_found: no x" {
		t.Errorf("Errorf: %+v %q", got, got.Error())
	}
}

// TestServerUsesOnlyTableCodes keeps the server from sending a code that
// is not in the table: every error answer is built from a code constant.
func TestServerUsesOnlyTableCodes(t *testing.T) {
	files, err := filepath.Glob("../*.go")
	if err != nil || len(files) == 0 {
		t.Fatal("no server sources", err)
	}
	free := regexp.MustCompile(`Code:\s*"|apiErr\(|&APIError\{|api\.Error\{\s*(Status|Code|Message)`)
	for _, f := range files {
		if filepath.Ext(f) != ".go" || regexp.MustCompile(`_test\.go$`).MatchString(f) {
			continue
		}
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if loc := free.FindIndex(src); loc != nil {
			t.Errorf("%s builds an error answer without a code from the table: %q", f, src[loc[0]:loc[1]])
		}
	}
}

// TestDocumentedCodes keeps the error table in docs/registry-api.md equal
// to the table of codes: every code, its status and its meaning, in order.
func TestDocumentedCodes(t *testing.T) {
	doc, err := os.ReadFile("../../docs/registry-api.md")
	if err != nil {
		t.Fatal(err)
	}
	row := regexp.MustCompile("(?m)^\\| `(\\w+)` \\| (\\d+) \\| (.*) \\|$")
	var got, want []string
	for _, m := range row.FindAllStringSubmatch(string(doc), -1) {
		got = append(got, m[1]+" "+m[2]+" "+m[3])
	}
	for _, c := range Codes() {
		want = append(want, fmt.Sprintf("%s %d %s", c, c.Status(), c.Meaning()))
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("docs/registry-api.md lists the error codes as\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
