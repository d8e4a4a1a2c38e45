// Package diag defines the diagnostics that every flowgen format, validator and
// generator reports: a stable code, a severity, a source position, a message and
// a human fix.
//
// Diagnostics are collected in a List, which, like go/scanner's ErrorList,
// reports every problem sorted by position and is "no error" when empty. The
// codes themselves, with their default severity and meaning, live in one table
// (Codes); docs/diagnostics.md documents the same table and a test keeps the two
// in agreement.
package diag

import (
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Severity says whether a diagnostic blocks (Error) or only advises (Warning).
type Severity int

const (
	// Error diagnostics make validation, generation and certification fail.
	Error Severity = iota
	// Warning diagnostics are printed but do not change the exit status.
	Warning
)

// String returns "error" or "warning".
func (s Severity) String() string {
	if s == Warning {
		return "warning"
	}
	return "error"
}

// MarshalText encodes the severity as its String form.
func (s Severity) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// Pos is a position in a source file. Line and Col are 1-based; Col counts
// bytes, as go/token does. The zero Pos means "no position known".
type Pos struct {
	File string
	Line int
	Col  int
}

// IsValid reports whether the position names a line.
func (p Pos) IsValid() bool { return p.Line > 0 }

// String formats the position as file:line:col, the form editors and compilers
// use; parts that are unknown are left out.
func (p Pos) String() string {
	switch {
	case p.File == "" && !p.IsValid():
		return "-"
	case !p.IsValid():
		return p.File
	case p.Col <= 0:
		return fmt.Sprintf("%s:%d", p.File, p.Line)
	default:
		return fmt.Sprintf("%s:%d:%d", p.File, p.Line, p.Col)
	}
}

// Before orders positions by file, then line, then column.
func (p Pos) Before(q Pos) bool {
	if p.File != q.File {
		return p.File < q.File
	}
	if p.Line != q.Line {
		return p.Line < q.Line
	}
	return p.Col < q.Col
}

// Diagnostic is one reported problem.
type Diagnostic struct {
	Pos      Pos
	Code     Code
	Severity Severity
	Message  string
	// Fix tells the reader what to change; empty when the message says it all.
	Fix string
}

// String renders the diagnostic like a compiler would:
// "file:line:col: error DAG201: message".
func (d Diagnostic) String() string {
	return fmt.Sprintf("%s: %s %s: %s", d.Pos, d.Severity, d.Code, d.Message)
}

// Error makes a single Diagnostic usable as an error.
func (d Diagnostic) Error() string { return d.String() }

// List is an ordered collection of diagnostics. The zero value is empty and
// ready to use.
type List []Diagnostic

// Add appends a diagnostic with the code's default severity. An empty fix is
// replaced by the code's general fix, so every diagnostic carries one.
func (l *List) Add(pos Pos, code Code, fix, format string, args ...any) {
	if fix == "" {
		in, _ := Lookup(code)
		fix = hint(in.Fix)
	}
	*l = append(*l, Diagnostic{
		Pos:      pos,
		Code:     code,
		Severity: code.Severity(),
		Message:  fmt.Sprintf(format, args...),
		Fix:      fix,
	})
}

// hint turns a documented fix sentence into the lower-case clause style of
// the hints reporters write.
func hint(sentence string) string {
	s := strings.TrimSuffix(sentence, ".")
	r, size := utf8.DecodeRuneInString(s)
	return string(unicode.ToLower(r)) + s[size:]
}

// Append adds all diagnostics of other.
func (l *List) Append(other List) { *l = append(*l, other...) }

// Sort orders the list by position, then code, then message, and removes exact
// duplicates, so output is stable whatever order passes ran in.
func (l *List) Sort() {
	s := *l
	sort.SliceStable(s, func(i, j int) bool {
		a, b := s[i], s[j]
		if a.Pos != b.Pos {
			return a.Pos.Before(b.Pos)
		}
		if a.Code != b.Code {
			return a.Code < b.Code
		}
		return a.Message < b.Message
	})
	out := s[:0]
	for i, d := range s {
		if i > 0 && d == s[i-1] {
			continue
		}
		out = append(out, d)
	}
	*l = out
}

// HasErrors reports whether any diagnostic has Error severity.
func (l List) HasErrors() bool {
	for _, d := range l {
		if d.Severity == Error {
			return true
		}
	}
	return false
}

// Err returns the list as an error when it holds at least one Error-severity
// diagnostic, and nil otherwise (warnings alone are not an error).
func (l List) Err() error {
	if !l.HasErrors() {
		return nil
	}
	return l
}

// Error summarises the list: the first error and how many more there are.
func (l List) Error() string {
	var first *Diagnostic
	errs := 0
	for i := range l {
		if l[i].Severity == Error {
			if first == nil {
				first = &l[i]
			}
			errs++
		}
	}
	switch {
	case first == nil:
		return "no errors"
	case errs == 1:
		return first.String()
	default:
		return fmt.Sprintf("%s (and %d more errors)", first, errs-1)
	}
}

// WriteText prints every diagnostic like a compiler, one per line, with the fix
// on an indented line below it.
func (l List) WriteText(w io.Writer) error {
	var b strings.Builder
	for _, d := range l {
		b.WriteString(d.String())
		b.WriteByte('\n')
		if d.Fix != "" {
			b.WriteString("\tfix: ")
			b.WriteString(d.Fix)
			b.WriteByte('\n')
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// jsonDiagnostic is the wire form of one diagnostic in JSON lines output.
type jsonDiagnostic struct {
	File     string   `json:"file"`
	Line     int      `json:"line"`
	Col      int      `json:"col"`
	Severity Severity `json:"severity"`
	Code     Code     `json:"code"`
	Message  string   `json:"message"`
	Fix      string   `json:"fix,omitempty"`
}

// WriteJSONLines prints one JSON object per diagnostic per line, for tools.
func (l List) WriteJSONLines(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false) // "a -> b" stays readable
	for _, d := range l {
		if err := enc.Encode(jsonDiagnostic{
			File: d.Pos.File, Line: d.Pos.Line, Col: d.Pos.Col,
			Severity: d.Severity, Code: d.Code, Message: d.Message, Fix: d.Fix,
		}); err != nil {
			return err
		}
	}
	return nil
}

// Source records where a decoded YAML/JSON mapping came from: the position of
// the mapping and of each of its keys' values. Format types embed it so that
// validators can point at the exact field they complain about.
type Source struct {
	Pos    Pos
	Fields map[string]Pos
}

// At returns the position of the named field's value, or of the mapping itself
// when the field was not written.
func (s Source) At(field string) Pos {
	if p, ok := s.Fields[field]; ok {
		return p
	}
	return s.Pos
}

// Has reports whether the field was written in the source.
func (s Source) Has(field string) bool {
	_, ok := s.Fields[field]
	return ok
}
