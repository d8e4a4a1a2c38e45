package diag

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

func TestSortOrdersByPositionAndDropsExactDuplicates(t *testing.T) {
	var l List
	l.Add(Pos{File: "b.yaml", Line: 1, Col: 1}, DAG202, "x", "m")
	l.Add(Pos{File: "a.yaml", Line: 9, Col: 2}, DAG201, "x", "m")
	l.Add(Pos{File: "a.yaml", Line: 9, Col: 1}, DAG205, "x", "m")
	l.Add(Pos{File: "a.yaml", Line: 9, Col: 1}, DAG200, "x", "m")
	l.Add(Pos{File: "a.yaml", Line: 9, Col: 1}, DAG200, "x", "m")
	l.Sort()
	var got []string
	for _, d := range l {
		got = append(got, d.Pos.String()+" "+string(d.Code))
	}
	want := "a.yaml:9:1 DAG200|a.yaml:9:1 DAG205|a.yaml:9:2 DAG201|b.yaml:1:1 DAG202"
	if strings.Join(got, "|") != want {
		t.Errorf("got %v, want %s", got, want)
	}
}

func TestAddTakesSeverityAndDefaultFixFromTheTable(t *testing.T) {
	var l List
	l.Add(Pos{File: "f", Line: 1, Col: 1}, CACHE001, "", "m")
	l.Add(Pos{File: "f", Line: 1, Col: 1}, FMT001, "", "m")
	l.Add(Pos{File: "f", Line: 1, Col: 1}, FMT002, "rename it", "m")
	if l[0].Severity != Warning || l[1].Severity != Error {
		t.Errorf("severities %v %v", l[0].Severity, l[1].Severity)
	}
	if !strings.HasPrefix(l[1].Fix, "fix the syntax") || strings.HasSuffix(l[1].Fix, ".") {
		t.Errorf("default fix %q is not the table's, as a clause", l[1].Fix)
	}
	if l[2].Fix != "rename it" {
		t.Errorf("explicit fix replaced: %q", l[2].Fix)
	}
}

func TestErrIgnoresWarnings(t *testing.T) {
	var l List
	l.Add(Pos{File: "f", Line: 1, Col: 1}, CACHE001, "", "only a warning")
	if l.Err() != nil || l.HasErrors() {
		t.Fatal("a warning made the list an error")
	}
	l.Add(Pos{File: "f", Line: 2, Col: 1}, DAG200, "", "cycle one")
	l.Add(Pos{File: "f", Line: 3, Col: 1}, DAG200, "", "cycle two")
	if err := l.Err(); err == nil || err.Error() != "f:2:1: error DAG200: cycle one (and 1 more errors)" {
		t.Fatalf("Err() = %v", err)
	}
}

func TestWriters(t *testing.T) {
	var l List
	l.Add(Pos{File: "f.yaml", Line: 3, Col: 7}, DAG201, "convert it", "a -> b: %s", "mismatch")
	var text, js bytes.Buffer
	if err := l.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	if text.String() != "f.yaml:3:7: error DAG201: a -> b: mismatch\n\tfix: convert it\n" {
		t.Errorf("text: %q", text.String())
	}
	if err := l.WriteJSONLines(&js); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(js.String(), `"message":"a -> b: mismatch"`) {
		t.Errorf("json escapes the arrow: %s", js.String())
	}
	var d map[string]any
	if err := json.Unmarshal(js.Bytes(), &d); err != nil {
		t.Fatal(err)
	}
	if d["file"] != "f.yaml" || d["line"] != 3.0 || d["col"] != 7.0 || d["severity"] != "error" || d["code"] != "DAG201" || d["fix"] != "convert it" {
		t.Errorf("json: %s", js.String())
	}
}

func TestCodeTableIsWellFormed(t *testing.T) {
	seen := map[Code]bool{}
	for _, in := range Codes {
		if seen[in.Code] {
			t.Errorf("%s listed twice", in.Code)
		}
		seen[in.Code] = true
		if in.Title == "" || in.Fix == "" || !strings.HasSuffix(in.Fix, ".") {
			t.Errorf("%s: title %q, fix %q (want both, fix a sentence)", in.Code, in.Title, in.Fix)
		}
	}
}
