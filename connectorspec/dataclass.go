package connectorspec

import (
	"sort"
	"strconv"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// ClassRank orders data classes by how much protection they need: public
// 0, internal 1, confidential 2, pii, financial and health (any subclass)
// 3, credential 4. An empty or unknown class ranks as public: a value of
// that class may go anywhere.
func ClassRank(class string) int {
	family, _, _ := strings.Cut(class, ".")
	switch family {
	case "internal":
		return 1
	case "confidential":
		return 2
	case "pii", "financial", "health":
		return 3
	case "credential":
		return 4
	}
	return 0
}

// WalkClasses calls f for every leaf of the JSON value v (decoded with
// encoding/json) with its JSON Pointer and the data class sch declares for
// it: the x-data-class written on its schema, or inherited from the
// nearest ancestor that has one ("" when none does).
func WalkClasses(sch *jsonschema.Schema, v any, f func(pointer, class string, leaf any)) {
	walkClasses(sch, v, "", "", f)
}

func walkClasses(sch *jsonschema.Schema, v any, ptr, inherited string, f func(string, string, any)) {
	class := inherited
	if c := classOf(sch); c != "" {
		class = c
	}
	switch x := v.(type) {
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			walkClasses(property(sch, k), x[k], ptr+"/"+escapePointer(k), class, f)
		}
	case []any:
		for i, e := range x {
			walkClasses(item(sch, i), e, ptr+"/"+strconv.Itoa(i), class, f)
		}
	default:
		f(ptr, class, v)
	}
}

// classOf is the x-data-class of sch, following $ref.
func classOf(sch *jsonschema.Schema) string {
	for s := sch; s != nil; s = s.Ref {
		if a, ok := AnnotationsOf(s); ok && a.DataClass != "" {
			return a.DataClass
		}
	}
	return ""
}

// property is the schema of object property k, following $ref and the
// combinators' branches.
func property(sch *jsonschema.Schema, k string) *jsonschema.Schema {
	for _, s := range branches(sch) {
		if p, ok := s.Properties[k]; ok {
			return p
		}
		if ap, ok := s.AdditionalProperties.(*jsonschema.Schema); ok {
			return ap
		}
	}
	return nil
}

// item is the schema of array element i.
func item(sch *jsonschema.Schema, i int) *jsonschema.Schema {
	for _, s := range branches(sch) {
		if i < len(s.PrefixItems) {
			return s.PrefixItems[i]
		}
		if s.Items2020 != nil {
			return s.Items2020
		}
		if it, ok := s.Items.(*jsonschema.Schema); ok {
			return it
		}
	}
	return nil
}

// branches lists sch, what it refers to and its combinators' schemas.
func branches(sch *jsonschema.Schema) []*jsonschema.Schema {
	var out []*jsonschema.Schema
	seen := map[*jsonschema.Schema]bool{}
	var add func(s *jsonschema.Schema)
	add = func(s *jsonschema.Schema) {
		if s == nil || seen[s] {
			return
		}
		seen[s] = true
		out = append(out, s)
		add(s.Ref)
		for _, list := range [][]*jsonschema.Schema{s.AllOf, s.AnyOf, s.OneOf} {
			for _, b := range list {
				add(b)
			}
		}
	}
	add(sch)
	return out
}

func escapePointer(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}
