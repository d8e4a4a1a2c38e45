package connectorspec

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// Mismatch is one reason a value valid against a source schema may be
// rejected by a target schema.
type Mismatch struct {
	// Path is the dotted field path ("" for the whole value).
	Path string
	// Problem says what differs, e.g. `is string in the source, integer in the target`.
	Problem string
	// Fix is a concrete change that removes the mismatch.
	Fix string
}

func (m Mismatch) String() string {
	if m.Path == "" {
		return m.Problem
	}
	return fmt.Sprintf("field %q %s", m.Path, m.Problem)
}

// Compatible reports the ways a value produced under src could fail dst. It is
// structural and conservative: a nil result means every value src allows is
// also accepted by dst as far as types, required fields, closed objects and
// enums go. A nil schema means "accepts anything".
func Compatible(src, dst *jsonschema.Schema) []Mismatch {
	var out []Mismatch
	compat(src, dst, "", &out, 0)
	return out
}

func deref(s *jsonschema.Schema) *jsonschema.Schema {
	for i := 0; s != nil && s.Ref != nil && i < 32; i++ {
		s = s.Ref
	}
	return s
}

// typesOf returns the JSON types a schema admits, or nil for "any".
func typesOf(s *jsonschema.Schema) []string {
	if s == nil {
		return nil
	}
	if s.Types != nil && !s.Types.IsEmpty() {
		return s.Types.ToStrings()
	}
	if s.Enum != nil {
		var ts []string
		for _, v := range s.Enum.Values {
			t := jsonType(v)
			if !slices.Contains(ts, t) {
				ts = append(ts, t)
			}
		}
		return ts
	}
	if len(s.Properties) > 0 {
		return []string{"object"}
	}
	return nil
}

func jsonType(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case string:
		return "string"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	}
	return "number"
}

func accepts(dst []string, t string) bool {
	return slices.Contains(dst, t) || (t == "integer" && slices.Contains(dst, "number"))
}

func typeWords(ts []string) string {
	if len(ts) == 0 {
		return "any value"
	}
	return strings.Join(ts, " or ")
}

const maxCompatDepth = 64

func compat(src, dst *jsonschema.Schema, path string, out *[]Mismatch, depth int) {
	src, dst = deref(src), deref(dst)
	if dst == nil || depth > maxCompatDepth || (dst.Bool != nil && *dst.Bool) {
		return
	}
	if dst.Bool != nil && !*dst.Bool {
		*out = append(*out, Mismatch{Path: path, Problem: "is rejected by the target schema (false)", Fix: "remove the field from the source"})
		return
	}
	st, dt := typesOf(src), typesOf(dst)
	if len(dt) > 0 {
		if len(st) == 0 {
			*out = append(*out, Mismatch{Path: path,
				Problem: fmt.Sprintf("may be any value in the source but must be %s in the target", typeWords(dt)),
				Fix:     fmt.Sprintf("declare type: %s in the source schema", typeWords(dt))})
			return
		}
		for _, t := range st {
			if !accepts(dt, t) {
				*out = append(*out, Mismatch{Path: path,
					Problem: fmt.Sprintf("is %s in the source but %s in the target", typeWords(st), typeWords(dt)),
					Fix:     fmt.Sprintf("convert it to %s with a transform node between the two, or change one of the schemas", typeWords(dt))})
				return
			}
		}
	}
	if dst.Enum != nil {
		if src == nil || src.Enum == nil {
			*out = append(*out, Mismatch{Path: path,
				Problem: fmt.Sprintf("is unrestricted in the source but the target accepts only %v", dst.Enum.Values),
				Fix:     "restrict the source with the same enum, or map values with a transform node"})
		} else {
			for _, v := range src.Enum.Values {
				if !slices.ContainsFunc(dst.Enum.Values, func(w any) bool { return fmt.Sprint(w) == fmt.Sprint(v) }) {
					*out = append(*out, Mismatch{Path: path,
						Problem: fmt.Sprintf("may be %v in the source, which the target's enum does not accept", v),
						Fix:     fmt.Sprintf("add %v to the target's enum or map it with a transform node", v)})
				}
			}
		}
	}
	if src == nil {
		return
	}
	if slices.Contains(st, "object") || len(dst.Properties) > 0 {
		objectCompat(src, dst, path, out, depth)
	}
	if slices.Contains(st, "array") {
		compat(src.Items2020, dst.Items2020, path+"[]", out, depth+1)
	}
}

func objectCompat(src, dst *jsonschema.Schema, path string, out *[]Mismatch, depth int) {
	join := func(name string) string {
		if path == "" {
			return name
		}
		return path + "." + name
	}
	names := make([]string, 0, len(dst.Properties))
	for name := range dst.Properties {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		sp, inSrc := src.Properties[name]
		required := slices.Contains(dst.Required, name)
		switch {
		case required && !inSrc:
			*out = append(*out, Mismatch{Path: join(name),
				Problem: fmt.Sprintf("is required by the target (%s) but the source does not produce it", typeWords(typesOf(deref(dst.Properties[name])))),
				Fix:     fmt.Sprintf("add %q to the source's output schema, or derive it with a transform node", name)})
		case required && !slices.Contains(src.Required, name):
			*out = append(*out, Mismatch{Path: join(name),
				Problem: "is required by the target but optional in the source",
				Fix:     fmt.Sprintf("mark %q required in the source schema", name)})
			compat(sp, dst.Properties[name], join(name), out, depth+1)
		case inSrc:
			compat(sp, dst.Properties[name], join(name), out, depth+1)
		}
	}
	if closed, ok := dst.AdditionalProperties.(bool); ok && !closed {
		extra := make([]string, 0)
		for name := range src.Properties {
			if _, ok := dst.Properties[name]; !ok {
				extra = append(extra, name)
			}
		}
		sort.Strings(extra)
		for _, name := range extra {
			*out = append(*out, Mismatch{Path: join(name),
				Problem: "is produced by the source but the target does not allow additional properties",
				Fix:     fmt.Sprintf("drop %q with a transform node or allow it in the target", name)})
		}
	}
}
