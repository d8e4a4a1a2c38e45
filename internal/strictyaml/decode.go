package strictyaml

import (
	"encoding"
	"fmt"
	"iter"
	"math"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/goccy/go-yaml/ast"

	"github.com/flowgen-dev/flowgen/diag"
	"github.com/flowgen-dev/flowgen/flowtype"
)

// Unmarshal parses data and decodes it into v (a non-nil pointer). It returns
// the root node, for callers that need positions beyond what v records, and
// every diagnostic found.
func Unmarshal(file string, data []byte, v any) (ast.Node, diag.List) {
	root, diags := Parse(file, data)
	if root == nil {
		return nil, diags
	}
	return root, Decode(file, root, v)
}

// Decode decodes an already parsed node into v (a non-nil pointer).
func Decode(file string, n ast.Node, v any) diag.List {
	d := &decoder{file: file, anchors: map[string]ast.Node{}}
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Pointer || rv.IsNil() {
		panic("strictyaml: Decode needs a non-nil pointer") // programming error, not input
	}
	d.value(n, rv.Elem(), "", diag.Pos{File: file, Line: 1, Col: 1})
	return d.diags
}

type decoder struct {
	file    string
	diags   diag.List
	anchors map[string]ast.Node
	visited int
	tooBig  bool
}

var (
	sourceType = reflect.TypeFor[diag.Source]()
	rawType    = reflect.TypeFor[Raw]()
	textType   = reflect.TypeFor[encoding.TextUnmarshaler]()
)

// resolve unwraps tags and anchors and follows aliases, counting every visit
// against the expansion budget. It returns nil once the budget is spent.
func (d *decoder) resolve(n ast.Node) ast.Node {
	for {
		d.visited++
		if d.visited > maxNodes {
			if !d.tooBig {
				d.tooBig = true
				d.diags.Add(nodePos(d.file, n, diag.Pos{File: d.file}), diag.FMT001, "remove anchors and aliases that expand recursively",
					"document expands to more than %d nodes", maxNodes)
			}
			return nil
		}
		switch v := n.(type) {
		case *ast.TagNode:
			n = v.Value
		case *ast.AnchorNode:
			if name, ok := v.Name.(*ast.StringNode); ok {
				d.anchors[name.Value] = v.Value
			}
			n = v.Value
		case *ast.AliasNode:
			name := ""
			if s, ok := v.Value.(*ast.StringNode); ok {
				name = s.Value
			}
			target, ok := d.anchors[name]
			if !ok {
				d.diags.Add(nodePos(d.file, v, diag.Pos{File: d.file}), diag.FMT001, "", "alias *%s refers to no earlier anchor", name)
				return nil
			}
			n = target
		default:
			return n
		}
	}
}

func (d *decoder) errorf(pos diag.Pos, code diag.Code, fix, format string, args ...any) {
	d.diags.Add(pos, code, fix, format, args...)
}

func where(path string) string {
	if path == "" {
		return "the top level"
	}
	return path
}

// value decodes n into rv. at is the position to use when n has none.
func (d *decoder) value(n ast.Node, rv reflect.Value, path string, at diag.Pos) {
	if n = d.resolve(n); n == nil && d.tooBig {
		return
	}
	pos := nodePos(d.file, n, at)
	if rv.Type() == rawType {
		raw := Raw{File: d.file, Pos: pos, positions: map[string]diag.Pos{}}
		raw.Value = d.plain(n, "", pos, &raw)
		rv.Set(reflect.ValueOf(raw))
		return
	}
	if isNull(n) {
		rv.SetZero()
		return
	}
	if rv.Kind() == reflect.Pointer {
		elem := reflect.New(rv.Type().Elem())
		d.value(n, elem.Elem(), path, at)
		rv.Set(elem)
		return
	}
	if reflect.PointerTo(rv.Type()).Implements(textType) {
		s, ok := scalarText(n)
		if !ok {
			d.errorf(pos, diag.FMT003, "", "%s: expected a string, got %s", where(path), describe(n))
			return
		}
		if err := rv.Addr().Interface().(encoding.TextUnmarshaler).UnmarshalText([]byte(s)); err != nil {
			d.errorf(pos, diag.FMT006, "", "%s: %v", where(path), err)
		}
		return
	}
	switch rv.Kind() {
	case reflect.Struct:
		d.structValue(n, rv, path, pos)
	case reflect.Map:
		d.mapValue(n, rv, path, pos)
	case reflect.Slice:
		seq, ok := n.(*ast.SequenceNode)
		if !ok {
			d.errorf(pos, diag.FMT003, "", "%s: expected a sequence, got %s", where(path), describe(n))
			return
		}
		out := reflect.MakeSlice(rv.Type(), len(seq.Values), len(seq.Values))
		for i, item := range seq.Values {
			d.value(item, out.Index(i), fmt.Sprintf("%s[%d]", path, i), pos)
		}
		rv.Set(out)
	case reflect.String:
		s, ok := n.(*ast.StringNode)
		if !ok {
			if lit, isLit := n.(*ast.LiteralNode); isLit {
				rv.SetString(lit.Value.Value)
				return
			}
			d.errorf(pos, diag.FMT003, "quote the value to make it a string", "%s: expected a string, got %s", where(path), describe(n))
			return
		}
		rv.SetString(s.Value)
	case reflect.Bool:
		b, ok := n.(*ast.BoolNode)
		if !ok {
			d.errorf(pos, diag.FMT003, "write true or false", "%s: expected a boolean, got %s", where(path), describe(n))
			return
		}
		rv.SetBool(b.Value)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		i, ok := n.(*ast.IntegerNode)
		v, inRange := int64(0), false
		if ok {
			switch x := i.Value.(type) {
			case int64:
				v, inRange = x, !rv.OverflowInt(x)
			case uint64:
				inRange = x <= math.MaxInt64 && !rv.OverflowInt(int64(x))
				v = int64(x)
			}
		}
		switch {
		case !ok:
			d.errorf(pos, diag.FMT003, "", "%s: expected an integer, got %s", where(path), describe(n))
		case !inRange:
			d.errorf(pos, diag.FMT006, "", "%s: integer %v out of range", where(path), i.Value)
		default:
			rv.SetInt(v)
		}
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		i, ok := n.(*ast.IntegerNode)
		v, inRange := uint64(0), false
		if ok {
			switch x := i.Value.(type) {
			case int64:
				inRange = x >= 0 && !rv.OverflowUint(uint64(x))
				v = uint64(x)
			case uint64:
				v, inRange = x, !rv.OverflowUint(x)
			}
		}
		switch {
		case !ok:
			d.errorf(pos, diag.FMT003, "", "%s: expected a non-negative integer, got %s", where(path), describe(n))
		case !inRange:
			d.errorf(pos, diag.FMT006, "", "%s: integer %v out of range (must be 0 or more)", where(path), i.Value)
		default:
			rv.SetUint(v)
		}
	case reflect.Float32, reflect.Float64:
		switch x := n.(type) {
		case *ast.FloatNode:
			rv.SetFloat(x.Value)
		case *ast.IntegerNode:
			f, _ := strconv.ParseFloat(fmt.Sprint(x.Value), 64)
			rv.SetFloat(f)
		default:
			d.errorf(pos, diag.FMT003, "", "%s: expected a number, got %s", where(path), describe(n))
		}
	case reflect.Interface:
		raw := Raw{File: d.file, Pos: pos, positions: map[string]diag.Pos{}}
		if v := d.plain(n, "", pos, &raw); v != nil {
			rv.Set(reflect.ValueOf(v))
		}
	default:
		panic(fmt.Sprintf("strictyaml: unsupported field type %s", rv.Type())) // programming error
	}
}

func isNull(n ast.Node) bool {
	_, ok := n.(*ast.NullNode)
	return n == nil || ok
}

// scalarText returns the text of a scalar that can feed a TextUnmarshaler.
func scalarText(n ast.Node) (string, bool) {
	switch v := n.(type) {
	case *ast.StringNode:
		return v.Value, true
	case *ast.LiteralNode:
		return v.Value.Value, true
	}
	return "", false
}

// pairs returns a mapping's key/value pairs, or ok=false if n is no mapping.
func pairs(n ast.Node) (kv []*ast.MappingValueNode, ok bool) {
	switch m := n.(type) {
	case *ast.MappingNode:
		return m.Values, true
	case *ast.MappingValueNode:
		return []*ast.MappingValueNode{m}, true
	}
	return nil, false
}

// keyText returns the text of a mapping key; keys must be scalars.
func (d *decoder) keyText(k ast.MapKeyNode, path string) (string, bool) {
	if _, ok := k.(*ast.MergeKeyNode); ok {
		d.errorf(nodePos(d.file, k, diag.Pos{File: d.file}), diag.FMT002, "write the fields out instead of merging", "%s: merge keys (<<) are not supported", where(path))
		return "", false
	}
	var node ast.Node = k
	if mk, ok := k.(*ast.MappingKeyNode); ok {
		node = mk.Value
	}
	switch v := node.(type) {
	case *ast.StringNode:
		return v.Value, true
	case *ast.IntegerNode, *ast.FloatNode, *ast.BoolNode:
		return v.GetToken().Value, true
	}
	d.errorf(nodePos(d.file, node, diag.Pos{File: d.file}), diag.FMT003, "", "%s: mapping keys must be strings, got %s", where(path), describe(node))
	return "", false
}

// seenKeys detects duplicate keys within one mapping.
// entries yields each key of a mapping once, with its position and pair,
// reporting unusable keys and duplicates (FMT004) instead of yielding them.
func (d *decoder) entries(kv []*ast.MappingValueNode, path string, pos diag.Pos) iter.Seq2[string, entry] {
	return func(yield func(string, entry) bool) {
		seen := map[string]diag.Pos{}
		for _, p := range kv {
			key, ok := d.keyText(p.Key, path)
			if !ok {
				continue
			}
			keyPos := nodePos(d.file, p.Key, pos)
			if first, dup := seen[key]; dup {
				d.errorf(keyPos, diag.FMT004, "remove one of the two entries", "%s: duplicate key %q (first defined at line %d)", where(path), key, first.Line)
				continue
			}
			seen[key] = keyPos
			if !yield(key, entry{keyPos, p.Value}) {
				return
			}
		}
	}
}

// entry is one mapping pair as entries yields it.
type entry struct {
	pos   diag.Pos
	value ast.Node
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

func (d *decoder) structValue(n ast.Node, rv reflect.Value, path string, pos diag.Pos) {
	kv, ok := pairs(n)
	if !ok {
		d.errorf(pos, diag.FMT003, "", "%s: expected a mapping, got %s", where(path), describe(n))
		return
	}
	fields := FieldsOf(rv.Type())
	src := diag.Source{Pos: pos, Fields: map[string]diag.Pos{}}
	present := map[string]bool{}
	for key, e := range d.entries(kv, path, pos) {
		keyPos := e.pos
		f, known := fields.byName(key)
		if !known {
			d.errorf(keyPos, diag.FMT002, fields.suggest(key), "%s: unknown field %q", where(path), key)
			continue
		}
		val := d.resolveForPos(e.value)
		src.Fields[key] = nodePos(d.file, val, keyPos)
		present[key] = !isNull(val)
		d.value(e.value, rv.Field(f.Index), join(path, key), keyPos)
	}
	for _, f := range fields.list {
		if f.Required && !present[f.Name] {
			d.errorf(pos, diag.FMT005, "", "%s: missing required field %q", where(path), f.Name)
		}
	}
	if fields.source >= 0 {
		rv.Field(fields.source).Set(reflect.ValueOf(src))
	}
}

// resolveForPos peeks through tags and anchors (not aliases) to find the node
// whose position a field's value should carry, without spending budget.
func (d *decoder) resolveForPos(n ast.Node) ast.Node {
	for {
		switch v := n.(type) {
		case *ast.TagNode:
			n = v.Value
		case *ast.AnchorNode:
			n = v.Value
		default:
			return n
		}
	}
}

func (d *decoder) mapValue(n ast.Node, rv reflect.Value, path string, pos diag.Pos) {
	if rv.Type().Key().Kind() != reflect.String {
		panic(fmt.Sprintf("strictyaml: map key type %s unsupported", rv.Type().Key())) // programming error
	}
	kv, ok := pairs(n)
	if !ok {
		d.errorf(pos, diag.FMT003, "", "%s: expected a mapping, got %s", where(path), describe(n))
		return
	}
	out := reflect.MakeMapWithSize(rv.Type(), len(kv))
	for key, e := range d.entries(kv, path, pos) {
		elem := reflect.New(rv.Type().Elem()).Elem()
		d.value(e.value, elem, join(path, key), e.pos)
		out.SetMapIndex(reflect.ValueOf(key).Convert(rv.Type().Key()), elem)
	}
	rv.Set(out)
}

// Field describes one decodable struct field.
type Field struct {
	Name     string
	Index    int
	Required bool
	Doc      string
	Type     reflect.Type
}

// Fields lists the decodable fields of a struct type in declaration order.
type Fields struct {
	list   []Field
	source int // index of the embedded diag.Source, or -1
}

// fieldsCache holds FieldsOf results by type; struct types never change.
var fieldsCache sync.Map // reflect.Type -> Fields

// FieldsOf returns the fields of struct type t as the decoder and the schema
// reflector see them.
func FieldsOf(t reflect.Type) Fields {
	if fs, ok := fieldsCache.Load(t); ok {
		return fs.(Fields)
	}
	fs := fieldsOf(t)
	fieldsCache.Store(t, fs)
	return fs
}

func fieldsOf(t reflect.Type) Fields {
	fs := Fields{source: -1}
	for i := range t.NumField() {
		sf := t.Field(i)
		if sf.Type == sourceType {
			fs.source = i
			continue
		}
		name, _, _ := strings.Cut(sf.Tag.Get("json"), ",")
		if name == "-" || !sf.IsExported() {
			continue
		}
		if name == "" {
			name = sf.Name
		}
		fs.list = append(fs.list, Field{
			Name:     name,
			Index:    i,
			Required: strings.Contains(sf.Tag.Get("flowgen"), "required"),
			Doc:      sf.Tag.Get("doc"),
			Type:     sf.Type,
		})
	}
	return fs
}

// List returns the fields in declaration order.
func (fs Fields) List() []Field { return fs.list }

func (fs Fields) byName(name string) (Field, bool) {
	for _, f := range fs.list {
		if f.Name == name {
			return f, true
		}
	}
	return Field{}, false
}

// suggest proposes the closest known field name, or lists them all.
func (fs Fields) suggest(name string) string {
	names := make([]string, 0, len(fs.list))
	for _, f := range fs.list {
		names = append(names, f.Name)
	}
	if best, ok := flowtype.Closest(name, names); ok {
		return fmt.Sprintf("did you mean %q?", best)
	}
	sort.Strings(names)
	return "known fields: " + strings.Join(names, ", ")
}
