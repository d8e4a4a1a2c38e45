// Package strictyaml reads YAML and JSON (a subset of YAML) into Go values
// strictly and with positions: unknown fields, wrong types, duplicate keys and
// missing required fields are reported as diagnostics naming file, line and
// column, and every problem in a file is reported, not just the first.
//
// Field names come from `json` struct tags so that the same types marshal to
// the canonical JSON form; a field is required when its `flowgen` tag says
// "required". A struct that embeds diag.Source gets the positions of the
// mapping and of every key it holds. Free-form subtrees (JSON Schemas, params,
// fixture data) decode into Raw, which keeps a plain JSON value plus the
// position of every element.
package strictyaml

import (
	"errors"
	"fmt"

	"github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/parser"
	"github.com/goccy/go-yaml/token"

	"github.com/flowgen-dev/flowgen/diag"
)

// maxNodes bounds how many nodes one decode may visit, counting alias
// expansions, so that a small file cannot expand into an enormous value.
const maxNodes = 1 << 20

// Parse parses one YAML or JSON document and returns its root node. Syntax
// errors, empty input and multi-document streams are reported as FMT001.
func Parse(file string, data []byte) (root ast.Node, diags diag.List) {
	defer func() {
		// The parser is third-party code fed with user input; a panic in it
		// must become a diagnostic, never a crash.
		if r := recover(); r != nil {
			root = nil
			diags = nil
			diags.Add(diag.Pos{File: file, Line: 1, Col: 1}, diag.FMT001, "", "cannot parse: %v", r)
		}
	}()
	f, err := parser.ParseBytes(data, 0, parser.AllowDuplicateMapKey())
	if err != nil {
		diags.Add(errorPos(file, err), diag.FMT001, "", "%s", errorMessage(err))
		return nil, diags
	}
	var bodies []*ast.DocumentNode
	for _, d := range f.Docs {
		if d != nil && d.Body != nil {
			bodies = append(bodies, d)
		}
	}
	switch {
	case len(bodies) == 0:
		diags.Add(diag.Pos{File: file, Line: 1, Col: 1}, diag.FMT001, "", "empty document")
		return nil, diags
	case len(bodies) > 1:
		diags.Add(nodePos(file, bodies[1].Body, diag.Pos{File: file, Line: 1, Col: 1}), diag.FMT001,
			"split the documents into separate files", "more than one YAML document in one file")
		return nil, diags
	}
	return bodies[0].Body, nil
}

// errorPos extracts the position the parser attached to err.
func errorPos(file string, err error) diag.Pos {
	var se *yaml.SyntaxError
	if errors.As(err, &se) && se.Token != nil {
		return tokenPos(file, se.Token)
	}
	return diag.Pos{File: file, Line: 1, Col: 1}
}

// errorMessage returns the parser's message without its multi-line source
// excerpt, which our own output format replaces.
func errorMessage(err error) string {
	var se *yaml.SyntaxError
	if errors.As(err, &se) {
		return se.Message
	}
	return err.Error()
}

func tokenPos(file string, tk *token.Token) diag.Pos {
	if tk == nil || tk.Position == nil {
		return diag.Pos{File: file}
	}
	return diag.Pos{File: file, Line: tk.Position.Line, Col: tk.Position.Column}
}

// nodePos returns the position of n, or fallback when n carries none. A
// mapping is positioned at its first key, which is where a reader looks.
func nodePos(file string, n ast.Node, fallback diag.Pos) diag.Pos {
	if n == nil {
		return fallback
	}
	switch m := n.(type) {
	case *ast.MappingNode:
		if len(m.Values) > 0 {
			return nodePos(file, m.Values[0], fallback)
		}
	case *ast.MappingValueNode:
		return nodePos(file, m.Key, fallback)
	}
	p := tokenPos(file, n.GetToken())
	if !p.IsValid() {
		return fallback
	}
	return p
}

// describe names a node's kind for "expected X, got Y" messages.
func describe(n ast.Node) string {
	switch v := n.(type) {
	case nil, *ast.NullNode:
		return "null"
	case *ast.BoolNode:
		return fmt.Sprintf("boolean %v", v.Value)
	case *ast.IntegerNode:
		return fmt.Sprintf("integer %v", v.Value)
	case *ast.FloatNode, *ast.InfinityNode, *ast.NanNode:
		return "number " + n.String()
	case *ast.StringNode, *ast.LiteralNode:
		return "string"
	case *ast.MappingNode, *ast.MappingValueNode:
		return "mapping"
	case *ast.SequenceNode:
		return "sequence"
	}
	return n.Type().String()
}
