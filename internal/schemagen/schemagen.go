// Package schemagen derives JSON Schemas (draft 2020-12) for flowgen's file
// formats from their Go types, reading the same struct tags as the strict
// decoder: `json` names, `flowgen:"required"`, `doc` descriptions and
// `const` values. Types with an EnumValues() []string method become string
// enums. Output is deterministic: the same types give the same bytes.
package schemagen

import (
	"bytes"
	"encoding"
	"encoding/json"
	"reflect"

	"github.com/flowgen-dev/flowgen/flowtype"
	"github.com/flowgen-dev/flowgen/internal/strictyaml"
)

type enumer interface{ EnumValues() []string }

var (
	rawType      = reflect.TypeFor[strictyaml.Raw]()
	durationType = reflect.TypeFor[flowtype.Duration]()
	textType     = reflect.TypeFor[encoding.TextUnmarshaler]()
	enumType     = reflect.TypeFor[enumer]()
)

// Generate returns the JSON Schema of root (a struct type), indented, with a
// trailing newline.
func Generate(root reflect.Type, id, title, description string) ([]byte, error) {
	g := &generator{defs: map[string]any{}}
	doc := map[string]any{
		"$schema":     "https://json-schema.org/draft/2020-12/schema",
		"$id":         id,
		"title":       title,
		"description": description,
		"$ref":        g.ref(root),
		"$defs":       g.defs,
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(doc); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

type generator struct {
	defs map[string]any
}

// ref defines struct type t under $defs (once) and returns its reference.
func (g *generator) ref(t reflect.Type) string {
	name := t.Name()
	if _, ok := g.defs[name]; !ok {
		g.defs[name] = nil // reserve, for recursive types
		g.defs[name] = g.object(t)
	}
	return "#/$defs/" + name
}

func (g *generator) object(t reflect.Type) map[string]any {
	props := map[string]any{}
	var required []string
	for _, f := range strictyaml.FieldsOf(t).List() {
		s := g.schema(f.Type)
		if f.Doc != "" {
			s = withDescription(s, f.Doc)
		}
		if c := t.Field(f.Index).Tag.Get("const"); c != "" {
			s = map[string]any{"const": c, "description": f.Doc}
		}
		props[f.Name] = s
		if f.Required {
			required = append(required, f.Name)
		}
	}
	out := map[string]any{"type": "object", "properties": props, "additionalProperties": false}
	if len(required) > 0 {
		out["required"] = required
	}
	return out
}

// withDescription adds a description, wrapping $refs (which must stand alone
// in older validators) in allOf.
func withDescription(s map[string]any, doc string) map[string]any {
	if _, isRef := s["$ref"]; isRef {
		return map[string]any{"allOf": []any{s}, "description": doc}
	}
	s["description"] = doc
	return s
}

func (g *generator) schema(t reflect.Type) map[string]any {
	if t.Kind() == reflect.Pointer {
		return g.schema(t.Elem())
	}
	switch {
	case t == rawType:
		return map[string]any{}
	case t == durationType:
		return map[string]any{"type": "string", "pattern": flowtype.DurationPattern}
	case t.Implements(enumType):
		return map[string]any{"type": "string", "enum": reflect.Zero(t).Interface().(enumer).EnumValues()}
	case reflect.PointerTo(t).Implements(textType):
		return map[string]any{"type": "string"}
	}
	switch t.Kind() {
	case reflect.Struct:
		return map[string]any{"$ref": g.ref(t)}
	case reflect.Slice:
		return map[string]any{"type": "array", "items": g.schema(t.Elem())}
	case reflect.Map:
		return map[string]any{"type": "object", "additionalProperties": g.schema(t.Elem())}
	case reflect.String:
		return map[string]any{"type": "string"}
	case reflect.Bool:
		return map[string]any{"type": "boolean"}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return map[string]any{"type": "integer"}
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return map[string]any{"type": "integer", "minimum": 0}
	case reflect.Float32, reflect.Float64:
		return map[string]any{"type": "number"}
	}
	return map[string]any{}
}
