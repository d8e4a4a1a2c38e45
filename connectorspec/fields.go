package connectorspec

import (
	"path/filepath"
	"strings"

	"github.com/flowgen-dev/flowgen/diag"
	"github.com/flowgen-dev/flowgen/internal/strictyaml"
)

// schemaNode is one JSON Schema object inside a source document, with the
// document it lives in (for positions) and that document's directory (for
// resolving relative $refs).
type schemaNode struct {
	m   map[string]any
	doc strictyaml.Raw
	ptr string
	dir string
}

// pos returns where the schema object is written.
func (n schemaNode) pos() diag.Pos { return n.doc.PosOf(n.ptr) }

// deref follows $ref chains (local pointers and sibling files) to the schema
// object they name. It stops after a bounded number of hops.
func (c *checker) deref(n schemaNode) schemaNode {
	for range 32 {
		ref, ok := n.m["$ref"].(string)
		if !ok {
			return n
		}
		filePart, frag, _ := strings.Cut(ref, "#")
		target := n
		if filePart != "" {
			path := filepath.Join(n.dir, filepath.FromSlash(filePart))
			doc, loaded, err := c.docs.file(path)
			if err != nil || !loaded {
				return n
			}
			target = schemaNode{doc: doc, dir: filepath.Dir(path)}
		}
		v, ptr, found := pointerLookup(target.doc.Value, frag)
		m, isMap := v.(map[string]any)
		if !found || !isMap {
			return n
		}
		n = schemaNode{m: m, doc: target.doc, ptr: ptr, dir: target.dir}
	}
	return n
}

// pointerLookup resolves a JSON Pointer fragment ("/$defs/Money") in v.
func pointerLookup(v any, frag string) (any, string, bool) {
	if frag == "" {
		return v, "", true
	}
	ptr := ""
	for _, tok := range strings.Split(strings.TrimPrefix(frag, "/"), "/") {
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		m, ok := v.(map[string]any)
		if !ok {
			return nil, "", false
		}
		if v, ok = m[tok]; !ok {
			return nil, "", false
		}
		ptr += "/" + strictyaml.PointerEscape(tok)
	}
	return v, ptr, true
}

// root returns the schema object of a port or params schema written in the
// spec, or ok=false when it is not an object.
func (c *checker) root(r strictyaml.Raw) (schemaNode, bool) {
	m, ok := r.Value.(map[string]any)
	if !ok {
		return schemaNode{}, false
	}
	return c.deref(schemaNode{m: m, doc: r, dir: c.dir}), true
}

// field finds the property at a dotted path ("customer.email") below n.
func (c *checker) field(n schemaNode, path string) (schemaNode, bool) {
	for _, seg := range strings.Split(path, ".") {
		props, _ := n.m["properties"].(map[string]any)
		p, ok := props[seg].(map[string]any)
		if !ok {
			return schemaNode{}, false
		}
		n = c.deref(schemaNode{m: p, doc: n.doc, ptr: n.ptr + "/properties/" + strictyaml.PointerEscape(seg), dir: n.dir})
	}
	return n, true
}

// propertyNames lists the names of n's properties, sorted.
func propertyNames(n schemaNode) []string {
	props, _ := n.m["properties"].(map[string]any)
	return sortedKeys(props)
}
