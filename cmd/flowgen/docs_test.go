package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/flowgen-dev/flowgen/diag"
)

// docSection is one "## CODE" section of docs/diagnostics.md.
type docSection struct {
	title, severity, caseDir, example, body string
}

func (s docSection) hasFix(fix string) bool { return strings.Contains(s.body, "\nFix: "+fix+"\n") }

var (
	docHeadingRE = regexp.MustCompile(`(?m)^## ([A-Z]+[0-9]+)$`)
	docTitleRE   = regexp.MustCompile(`(?m)^\*\*(.+)\*\* \((error|warning)\)$`)
	docCaseRE    = regexp.MustCompile("(?m)^Example \\(`testdata/invalid/([^`]+)`\\):$")
	docExampleRE = regexp.MustCompile("(?s)```\n(.*?)\n```")
	docRowRE     = regexp.MustCompile(`(?m)^\| \[([A-Z]+[0-9]+)\]\(#[a-z0-9]+\) \| (error|warning) \| (.+) \|$`)
)

func parseDiagnosticsDoc(t *testing.T) (sections map[string]docSection, order []string, rows map[string]string) {
	t.Helper()
	data, err := os.ReadFile("../../docs/diagnostics.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(data)
	sections = map[string]docSection{}
	idx := docHeadingRE.FindAllStringSubmatchIndex(doc, -1)
	for i, m := range idx {
		code := doc[m[2]:m[3]]
		end := len(doc)
		if i+1 < len(idx) {
			end = idx[i+1][0]
		}
		body := doc[m[1]:end]
		s := docSection{body: body}
		if tm := docTitleRE.FindStringSubmatch(body); tm != nil {
			s.title, s.severity = tm[1], tm[2]
		}
		if cm := docCaseRE.FindStringSubmatch(body); cm != nil {
			s.caseDir = cm[1]
		}
		if em := docExampleRE.FindStringSubmatch(body); em != nil {
			s.example = em[1]
		}
		if !strings.Contains(body, "\nFix: ") {
			t.Errorf("docs: %s has no Fix: paragraph", code)
		}
		if _, dup := sections[code]; dup {
			t.Errorf("docs: %s documented twice", code)
		}
		sections[code] = s
		order = append(order, code)
	}
	rows = map[string]string{}
	for _, m := range docRowRE.FindAllStringSubmatch(doc, -1) {
		rows[m[1]] = m[2] + " " + m[3]
	}
	return sections, order, rows
}

// TestDiagnosticsDocMatchesCodeTable fails when docs/diagnostics.md and
// diag.Codes disagree: a code missing from either, a different title or
// severity, a different order, or an example that is not what the named
// invalid case really prints.
func TestDiagnosticsDocMatchesCodeTable(t *testing.T) {
	t.Parallel()
	sections, order, rows := parseDiagnosticsDoc(t)
	var want []string
	for _, in := range diag.Codes {
		code := string(in.Code)
		want = append(want, code)
		s, ok := sections[code]
		if !ok {
			t.Errorf("docs: %s (%s) is not documented", code, in.Title)
			continue
		}
		if s.title != in.Title || s.severity != in.Severity.String() {
			t.Errorf("docs: %s is %q (%s), table says %q (%s)", code, s.title, s.severity, in.Title, in.Severity)
		}
		if !s.hasFix(in.Fix) {
			t.Errorf("docs: %s does not say \"Fix: %s\"", code, in.Fix)
		}
		if rows[code] != in.Severity.String()+" "+in.Title {
			t.Errorf("docs: summary row for %s is %q", code, rows[code])
		}
		if !strings.HasPrefix(s.caseDir, code+"-") {
			t.Errorf("docs: %s's example comes from %q, not a case of that code", code, s.caseDir)
			continue
		}
		var stdout, stderr bytes.Buffer
		dir := filepath.Join(invalidDir, s.caseDir)
		Run(context.Background(), []string{"validate", dir}, os.Getenv, nil, &stdout, &stderr)
		got := strings.ReplaceAll(stdout.String(), filepath.ToSlash(dir)+"/", "")
		if s.example == "" || !strings.Contains(got, s.example+"\n") {
			t.Errorf("docs: %s example\n%s\nis not what %s prints:\n%s", code, s.example, s.caseDir, got)
		}
	}
	if strings.Join(order, " ") != strings.Join(want, " ") {
		t.Errorf("docs: sections are\n%v\nthe table is\n%v", order, want)
	}
	if len(rows) != len(diag.Codes) {
		t.Errorf("docs: summary table has %d rows, the code table %d", len(rows), len(diag.Codes))
	}
}
