package flowir

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/flowgen-dev/flowgen/connectorspec"
	"github.com/flowgen-dev/flowgen/diag"
	"github.com/flowgen-dev/flowgen/internal/strictyaml"
)

// InputProblem is one reason a job input is refused.
type InputProblem struct {
	// Pos is where in the input the problem is, when known.
	Pos diag.Pos `json:"pos,omitzero"`
	// Path is the JSON path of the offending value ($ for the whole input),
	// and Pointer its JSON Pointer ("" for the whole input).
	Path    string `json:"path"`
	Pointer string `json:"-"`
	// Node is the entry node whose input schema refused the value ("" for
	// a syntax error).
	Node    string `json:"node,omitempty"`
	Message string `json:"message"`
}

func (p InputProblem) String() string {
	var b strings.Builder
	if p.Pos.IsValid() {
		b.WriteString(p.Pos.String() + ": ")
	}
	b.WriteString(p.Path + ": " + p.Message)
	if p.Node != "" {
		b.WriteString(" (input of " + p.Node + ")")
	}
	return b.String()
}

// InputError is a job input that is not JSON, or that an entry node's
// input schema refuses; Problems lists every violation found.
type InputError struct {
	Flow     string         `json:"flow"`
	Problems []InputProblem `json:"problems"`
}

func (e *InputError) Error() string {
	lines := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		lines[i] = p.String()
	}
	return fmt.Sprintf("input of flow %s refused:\n\t%s", e.Flow, strings.Join(lines, "\n\t"))
}

// Entries returns the nodes a job's input goes to: those with no incoming
// edge (back edges of loops aside) that are not a forEach's body, in flow
// order.
func (g *Graph) Entries() []*GraphNode {
	fed := map[*GraphNode]bool{}
	for _, e := range g.Edges {
		if !e.Back() {
			fed[e.To] = true
		}
	}
	var out []*GraphNode
	for _, n := range g.Nodes {
		if !fed[n] && n.BodyOf == nil {
			out = append(out, n)
		}
	}
	return out
}

// CheckInput checks a job input before a job is created from it: data
// must be one JSON value and satisfy the input schema of every entry node.
// file names the input in positions ("" for standard input). The error,
// when not nil, is an *InputError listing every problem.
func (g *Graph) CheckInput(file string, data []byte) error {
	if file == "" {
		file = "<stdin>"
	}
	fail := &InputError{Flow: g.Flow.ID}
	if err := syntaxProblem(file, data); err != nil {
		fail.Problems = append(fail.Problems, *err)
		return fail
	}
	value, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
	if err != nil {
		fail.Problems = append(fail.Problems, InputProblem{Pos: diag.Pos{File: file}, Path: "$", Message: err.Error()})
		return fail
	}
	var raw strictyaml.Raw
	strictyaml.Unmarshal(file, data, &raw) // positions only: the JSON is valid
	for _, n := range g.Entries() {
		for _, port := range sortedPorts(n.In) {
			p := n.In[port]
			if p.Schema == nil || !p.Typed {
				continue
			}
			err := p.Schema.Validate(value)
			violations := connectorspec.Violations(err)
			if err != nil && len(violations) == 0 {
				violations = []connectorspec.Violation{{Message: err.Error()}}
			}
			for _, v := range violations {
				ptr, path := "", "$"
				for _, tok := range v.Location {
					ptr += "/" + strictyaml.PointerEscape(tok)
					path += jsonPathStep(tok)
				}
				fail.Problems = append(fail.Problems, InputProblem{Pos: raw.PosOf(ptr), Path: path, Pointer: ptr, Node: n.Alias, Message: v.Message})
			}
		}
	}
	if len(fail.Problems) == 0 {
		return nil
	}
	// The validator visits properties in map order: report in input order.
	sort.SliceStable(fail.Problems, func(i, j int) bool {
		a, b := fail.Problems[i], fail.Problems[j]
		if a.Pos != b.Pos {
			return a.Pos.Before(b.Pos)
		}
		return a.Path < b.Path
	})
	return fail
}

// syntaxProblem reports where data stops being one JSON value.
func syntaxProblem(file string, data []byte) *InputProblem {
	problem := func(off int64, msg string) *InputProblem {
		return &InputProblem{Pos: offsetPos(file, data, off), Path: "$", Message: msg}
	}
	if len(bytes.TrimSpace(data)) == 0 {
		return problem(0, "empty input: want a JSON value")
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	var v any
	err := dec.Decode(&v)
	if err == nil {
		end := dec.InputOffset()
		if _, err = dec.Token(); err == io.EOF {
			return nil
		}
		if err == nil {
			rest := data[end:]
			return problem(end+int64(len(rest)-len(bytes.TrimLeft(rest, " \t\r\n"))), "unexpected data after the JSON value")
		}
	}
	var se *json.SyntaxError
	switch {
	case errors.As(err, &se):
		return problem(se.Offset-1, "JSON syntax: "+se.Error())
	case errors.Is(err, io.ErrUnexpectedEOF):
		return problem(int64(len(data)), "JSON ends early")
	}
	return problem(0, err.Error())
}

// offsetPos turns a byte offset into a line and column (counting from 1).
func offsetPos(file string, data []byte, off int64) diag.Pos {
	off = min(max(off, 0), int64(len(data)))
	before := data[:off]
	line := bytes.Count(before, []byte("\n")) + 1
	col := int(off) - bytes.LastIndexByte(before, '\n')
	return diag.Pos{File: file, Line: line, Col: col}
}

func jsonPathStep(tok string) string {
	if tok != "" && strings.Trim(tok, "0123456789") == "" {
		return "[" + tok + "]"
	}
	if strings.IndexFunc(tok, func(r rune) bool {
		return !(r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9')
	}) >= 0 || tok == "" {
		b, _ := json.Marshal(tok)
		return "[" + string(b) + "]"
	}
	return "." + tok
}

func sortedPorts(m map[string]*Port) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
