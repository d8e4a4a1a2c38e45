package strictyaml

import (
	"encoding/json"
	"math"
	"strconv"
	"strings"

	"github.com/goccy/go-yaml/ast"

	"github.com/flowgen-dev/flowgen/diag"
)

// Raw is a free-form subtree kept as a plain JSON value (map[string]any, []any,
// string, int64, uint64, float64, bool or nil) together with the source
// position of every element, addressed by JSON Pointer.
type Raw struct {
	Value any
	File  string
	Pos   diag.Pos
	// positions maps a JSON Pointer ("" for the root, "/a/0/b") to where that
	// element's value starts.
	positions map[string]diag.Pos
}

// IsZero reports whether nothing was written for this value.
func (r Raw) IsZero() bool { return r.Value == nil && !r.Pos.IsValid() }

// PosOf returns the position of the element at the JSON Pointer, falling back
// to its nearest written ancestor.
func (r Raw) PosOf(pointer string) diag.Pos {
	for {
		if p, ok := r.positions[pointer]; ok {
			return p
		}
		i := strings.LastIndexByte(pointer, '/')
		if i < 0 {
			return r.Pos
		}
		pointer = pointer[:i]
	}
}

// MarshalJSON encodes the plain value.
func (r Raw) MarshalJSON() ([]byte, error) { return json.Marshal(r.Value) }

// FromValue wraps a plain value that has no source, for values built in code.
func FromValue(v any) Raw { return Raw{Value: v} }

// PointerEscape escapes one JSON Pointer reference token.
func PointerEscape(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}

// plain converts n to a plain JSON value, recording positions in raw.
func (d *decoder) plain(n ast.Node, ptr string, at diag.Pos, raw *Raw) any {
	n = d.resolve(n)
	if n == nil {
		return nil
	}
	pos := nodePos(d.file, n, at)
	raw.positions[ptr] = pos
	switch v := n.(type) {
	case *ast.NullNode:
		return nil
	case *ast.BoolNode:
		return v.Value
	case *ast.IntegerNode:
		return v.Value
	case *ast.FloatNode:
		if math.IsNaN(v.Value) || math.IsInf(v.Value, 0) {
			d.errorf(pos, diag.FMT006, "", "%s is not a JSON number", n.String())
			return nil
		}
		return v.Value
	case *ast.InfinityNode, *ast.NanNode:
		d.errorf(pos, diag.FMT006, "", "%s is not a JSON number", n.String())
		return nil
	case *ast.StringNode:
		return v.Value
	case *ast.LiteralNode:
		return v.Value.Value
	case *ast.SequenceNode:
		out := make([]any, len(v.Values))
		for i, item := range v.Values {
			out[i] = d.plain(item, ptr+"/"+strconv.Itoa(i), pos, raw)
		}
		return out
	case *ast.MappingNode, *ast.MappingValueNode:
		kv, _ := pairs(n)
		out := make(map[string]any, len(kv))
		for key, e := range d.entries(kv, ptr, pos) {
			out[key] = d.plain(e.value, ptr+"/"+PointerEscape(key), e.pos, raw)
		}
		return out
	}
	d.errorf(pos, diag.FMT003, "", "unsupported YAML node %s", n.Type())
	return nil
}

// JSON returns the value with every number as a json.Number, the form JSON
// Schema libraries expect for documents and instances.
func (r Raw) JSON() any { return jsonValue(r.Value) }

func jsonValue(v any) any {
	switch x := v.(type) {
	case int64:
		return json.Number(strconv.FormatInt(x, 10))
	case uint64:
		return json.Number(strconv.FormatUint(x, 10))
	case float64:
		return json.Number(strconv.FormatFloat(x, 'g', -1, 64))
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = jsonValue(e)
		}
		return out
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = jsonValue(e)
		}
		return out
	}
	return v
}
