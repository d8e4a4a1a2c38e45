package certify

import (
	"encoding/json"
	"fmt"
	"maps"
	"math/big"
	"slices"
	"strconv"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/flowgen-dev/flowgen/internal/httpfixture"
)

// maxGenerated bounds the inputs generated from the schemas per run.
const maxGenerated = 48

// alteration is one change the schemas allow to a fixture's input or
// params: a field set to another enum value, a bound, its default or the
// other boolean, or an optional field left out.
type alteration struct {
	what  string
	apply func(obj map[string]any)
	// field is the dotted path it changes; flag is set for an enum value
	// or a boolean, which generatedInputs also combines in pairs.
	field string
	flag  bool
}

// generatedInputs derives inputs from the success fixtures and the
// schemas, so that what no fixture uses still runs: every other enum
// value of each field, each optional field absent (and present, at its
// default, when the fixture leaves it out), numbers at their bounds,
// integers at each power of ten between, strings at their shortest and
// longest, booleans flipped, enum values and booleans in pairs, and the
// same for params. Each has its key fields
// redrawn, so that it has a key of its own, and validates against the
// schemas; at most maxGenerated are returned.
func (c *run) generatedInputs() []dupInput {
	var out []dupInput
	seen := map[string]bool{}
	keyFields := map[string]bool{}
	if c.spec.Idempotency != nil {
		for _, f := range c.spec.Idempotency.Key {
			keyFields[f] = true
		}
	}
	inSchema, paramsSchema := c.spec.InputSchema(c.spec.PrimaryInputPort()), c.spec.ParamsSchema()
	for _, fx := range c.manifest.Fixtures {
		if !fx.Succeeds() {
			continue
		}
		for _, part := range []struct {
			name   string
			raw    json.RawMessage
			schema *jsonschema.Schema
			set    func(httpfixture.Fixture, json.RawMessage) httpfixture.Fixture
			valid  func(json.RawMessage) bool
		}{
			{"input", fx.Input, inSchema, func(f httpfixture.Fixture, b json.RawMessage) httpfixture.Fixture { f.Input = b; return f }, c.validInput},
			{"params", fx.Params, paramsSchema, func(f httpfixture.Fixture, b json.RawMessage) httpfixture.Fixture { f.Params = b; return f }, c.validParams},
		} {
			if part.schema == nil {
				continue
			}
			raw := part.raw
			if len(raw) == 0 {
				raw = json.RawMessage("{}")
			}
			alts := alterations(part.schema, raw, "", keyFields, part.name == "input")
			// Flags in pairs: an effect behind two options at once.
			var flags []alteration
			for _, a := range alts {
				if a.flag {
					flags = append(flags, a)
				}
			}
			for i, a := range flags {
				for _, b := range flags[i+1:] {
					if a.field != b.field {
						alts = append(alts, alteration{what: a.what + " and " + b.what, apply: func(m map[string]any) { a.apply(m); b.apply(m) }})
					}
				}
			}
			for _, alt := range alts {
				obj, err := decodeJSON(raw)
				m, ok := obj.(map[string]any)
				if err != nil || !ok {
					break
				}
				alt.apply(m)
				b, err := json.Marshal(m)
				if err != nil || !part.valid(b) {
					continue
				}
				variant := part.set(fx, b)
				variant.Name = fmt.Sprintf("%s with %s %s", fx.Name, part.name, alt.what)
				kv, ok := c.keyVariant(variant)
				if !ok {
					continue
				}
				id := string(kv.Params) + "\x00" + string(kv.Input)
				if seen[id] {
					continue
				}
				seen[id] = true
				out = append(out, dupInput{name: "generated: fixture " + variant.Name, fx: kv, generated: true})
				if len(out) == maxGenerated {
					return out
				}
			}
		}
	}
	return out
}

// alterations lists the changes schema allows to the object raw, whose
// fields are at prefix; key fields (of the input) are left to keyVariant,
// but for an enum's other values, which keyVariant cannot draw.
func alterations(schema *jsonschema.Schema, raw json.RawMessage, prefix string, keyFields map[string]bool, input bool) []alteration {
	schema = resolve(schema)
	v, err := decodeJSON(raw)
	obj, ok := v.(map[string]any)
	if err != nil || !ok || schema == nil {
		return nil
	}
	var out []alteration
	for _, name := range slices.Sorted(maps.Keys(schema.Properties)) {
		ps := resolve(schema.Properties[name])
		path := prefix + name
		if input && keyFields[path] && ps.Enum == nil {
			continue // keyVariant draws it anew; an enum takes its values below
		}
		cur, present := obj[name]
		set := func(what string, value any, flag bool) {
			out = append(out, alteration{what: fmt.Sprintf("%s %s", path, what), apply: func(m map[string]any) { setPath(m, path, value) }, field: path, flag: flag})
		}
		setTo := func(what string, value any) { set(what, value, false) }
		if ps.Enum != nil {
			for _, e := range ps.Enum.Values {
				if !present || fmt.Sprint(e) != fmt.Sprint(cur) {
					set(fmt.Sprintf("= %v (enum)", e), e, true)
				}
			}
		}
		if ps.Types != nil && slices.Contains(ps.Types.ToStrings(), "boolean") {
			b, _ := cur.(bool)
			set(fmt.Sprintf("= %v", !b), !b, true)
		}
		// Integers at each power of ten between their bounds: a branch on
		// a range inside the bounds shows.
		if ps.Minimum != nil && ps.Maximum != nil && ps.Types != nil && slices.Contains(ps.Types.ToStrings(), "integer") {
			for v := big.NewRat(1, 1); v.Cmp(ps.Maximum) <= 0; v.Mul(v, big.NewRat(10, 1)) {
				if v.Cmp(ps.Minimum) > 0 && v.Cmp(ps.Maximum) < 0 {
					n := ratNumber(v)
					if fmt.Sprint(cur) != n.String() {
						setTo(fmt.Sprintf("= %s (a magnitude)", n), n)
					}
				}
			}
		}
		for _, bound := range []struct {
			name string
			rat  *big.Rat
		}{{"minimum", ps.Minimum}, {"maximum", ps.Maximum}} {
			if bound.rat != nil {
				n := ratNumber(bound.rat)
				if !present || fmt.Sprint(cur) != n.String() {
					setTo(fmt.Sprintf("= %s (its %s)", n, bound.name), n)
				}
			}
		}
		if str, ok := cur.(string); ok {
			for _, bound := range []struct {
				name string
				n    *int
			}{{"minLength", ps.MinLength}, {"maxLength", ps.MaxLength}} {
				if bound.n != nil && *bound.n != len([]rune(str)) && *bound.n <= 4096 {
					setTo(fmt.Sprintf("of %d characters (its %s)", *bound.n, bound.name), resize(str, *bound.n))
				}
			}
		}
		required := slices.Contains(schema.Required, name)
		switch {
		case present && !required:
			out = append(out, alteration{what: path + " absent", apply: func(m map[string]any) { deletePath(m, path) }})
		case !present && ps.Default != nil:
			setTo(fmt.Sprintf("= %v (its default)", *ps.Default), *ps.Default)
		}
		if sub, ok := cur.(map[string]any); ok && len(ps.Properties) > 0 {
			b, err := json.Marshal(sub)
			if err == nil {
				out = append(out, alterations(ps, b, path+".", keyFields, input)...)
			}
		}
	}
	return out
}

// resolve follows a schema's references.
func resolve(s *jsonschema.Schema) *jsonschema.Schema {
	for i := 0; s != nil && s.Ref != nil && i < 16; i++ {
		s = s.Ref
	}
	return s
}

// ratNumber renders a schema bound as a JSON number.
func ratNumber(r *big.Rat) json.Number {
	if r.IsInt() {
		return json.Number(r.Num().String())
	}
	f, _ := r.Float64()
	return json.Number(strconv.FormatFloat(f, 'g', -1, 64))
}

// setPath sets a dotted path, creating objects on the way.
func setPath(obj map[string]any, path string, v any) {
	segs := strings.Split(path, ".")
	cur := obj
	for _, seg := range segs[:len(segs)-1] {
		next, ok := cur[seg].(map[string]any)
		if !ok {
			next = map[string]any{}
			cur[seg] = next
		}
		cur = next
	}
	cur[segs[len(segs)-1]] = v
}

// deletePath removes a dotted path.
func deletePath(obj map[string]any, path string) {
	segs := strings.Split(path, ".")
	cur := obj
	for _, seg := range segs[:len(segs)-1] {
		next, ok := cur[seg].(map[string]any)
		if !ok {
			return
		}
		cur = next
	}
	delete(cur, segs[len(segs)-1])
}

// resize cuts s to n characters, or repeats it until it has n.
func resize(s string, n int) string {
	r := []rune(s)
	if len(r) == 0 {
		r = []rune("x")
	}
	for len(r) < n {
		r = append(r, r...)
	}
	return string(r[:n])
}
