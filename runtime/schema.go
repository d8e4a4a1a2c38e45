package runtime

// This file is the support library of the Go types flowgen generates from
// JSON Schema. Generated code calls it to decode objects with the exact
// path of every problem ("customer.email: required"), to apply defaults,
// and to check value constraints; connector authors rarely call it
// directly.
//
// Decoding is strict where the schema is: a required property that is
// absent, a value of the wrong JSON type, or a property the schema forbids
// (additionalProperties: false) is an error naming its path. Validate
// methods check the value constraints (length, range, pattern, enum, items)
// and report every violation, not just the first.

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// FieldError is one problem with one value, located by its path from the
// value being decoded or validated ("lines[2].qty"; empty for the root).
// Value is the offending value as printed, kept apart from Msg so that
// Redact can remove it; empty when the message shows no value.
type FieldError struct {
	Path  string
	Value string
	Msg   string
}

func (e *FieldError) Error() string {
	msg := e.Msg
	if e.Value != "" {
		msg = e.Value + " " + msg
	}
	if e.Path == "" {
		return msg
	}
	return e.Path + ": " + msg
}

// Join returns the path of property name inside path.
func PathJoin(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}

// Index returns the path of element i inside path.
func PathIndex(path string, i int) string { return path + "[" + strconv.Itoa(i) + "]" }

// Key returns the path of map entry k inside path.
func PathKey(path, k string) string { return path + "[" + strconv.Quote(k) + "]" }

// under re-roots err below path: field errors get path prepended, other
// errors (from encoding/json or a nested decoder) become field errors at path.
func under(path string, err error) error {
	var fe *FieldError
	if errors.As(err, &fe) {
		return &FieldError{Path: joinPaths(path, fe.Path), Value: fe.Value, Msg: fe.Msg}
	}
	var ute *json.UnmarshalTypeError
	if errors.As(err, &ute) {
		return &FieldError{Path: joinPaths(path, ute.Field), Msg: "expected " + jsonTypeOf(ute.Type.Kind().String()) + ", got " + ute.Value}
	}
	return &FieldError{Path: path, Msg: err.Error()}
}

func joinPaths(outer, inner string) string {
	switch {
	case inner == "":
		return outer
	case outer == "":
		return inner
	case strings.HasPrefix(inner, "["):
		return outer + inner
	}
	return outer + "." + inner
}

func jsonTypeOf(goKind string) string {
	switch goKind {
	case "string":
		return "string"
	case "bool":
		return "boolean"
	case "int", "int64", "int32", "uint", "uint64":
		return "integer"
	case "float64", "float32":
		return "number"
	case "slice", "array":
		return "array"
	case "map", "struct":
		return "object"
	}
	return goKind
}

// Object is a JSON object split into its properties, the first step of
// decoding a generated struct.
type Object struct {
	props []member // in input order; a repeated name's last value counts
	buf   [8]member
	err   error
}

// DecodeObject splits data, which must be a JSON object, into properties.
// Errors surface from Err so that generated decoders stay straight-line.
func DecodeObject(data []byte) *Object {
	o := &Object{}
	trimmed := bytes.TrimSpace(data)
	if len(trimmed) == 0 || trimmed[0] != '{' {
		o.err = &FieldError{Msg: "expected object, got " + describe(trimmed)}
		return o
	}
	o.props = o.buf[:0]
	if split(trimmed, '{', &o.props) {
		return o
	}
	o.props = nil
	var props map[string]json.RawMessage
	if err := json.Unmarshal(trimmed, &props); err != nil {
		o.err = under("", err)
	}
	for _, k := range slices.Sorted(maps.Keys(props)) {
		o.props = append(o.props, member{[]byte(k), props[k]})
	}
	return o
}

func describe(raw []byte) string {
	if len(raw) == 0 {
		return "nothing"
	}
	switch raw[0] {
	case '"':
		return "string"
	case '[':
		return "array"
	case 't', 'f':
		return "boolean"
	case 'n':
		return "null"
	}
	return "number"
}

// get returns the value of property name.
func (o *Object) get(name string) (json.RawMessage, bool) {
	for i := len(o.props) - 1; i >= 0; i-- {
		if string(o.props[i].name) == name {
			return o.props[i].raw, true
		}
	}
	return nil, false
}

// Required records an error for each name that is absent.
func (o *Object) Required(names ...string) {
	if o.err != nil {
		return
	}
	var missing []error
	for _, n := range names {
		if _, ok := o.get(n); !ok {
			missing = append(missing, &FieldError{Path: n, Msg: "required property is missing"})
		}
	}
	o.err = errors.Join(missing...)
}

// Has reports whether the object has property name.
func (o *Object) Has(name string) bool {
	_, ok := o.get(name)
	return ok && o.err == nil
}

// Closed records an error for every property not in known, in sorted order
// of the offending names (for additionalProperties: false).
func (o *Object) Closed(known ...string) {
	if o.err != nil {
		return
	}
	var extra []string
	for _, m := range o.props {
		if name := string(m.name); !slices.Contains(known, name) && !slices.Contains(extra, name) {
			extra = append(extra, name)
		}
	}
	if len(extra) == 0 {
		return
	}
	slices.Sort(extra)
	errs := make([]error, len(extra))
	for i, k := range extra {
		errs[i] = &FieldError{Path: k, Msg: "property is not allowed by the schema"}
	}
	o.err = errors.Join(errs...)
}

// Field decodes property name into dst when present; dst keeps its value
// (the default) when absent.
func DecodeField[T any](o *Object, name string, dst *T) {
	raw, ok := o.get(name)
	if !ok || o.err != nil {
		return
	}
	if err := decodeValue(raw, dst); err != nil {
		o.err = under(name, err)
	}
}

// Optional decodes property name into a newly allocated value when present
// and not null; dst keeps its value (nil or the default) otherwise.
func DecodeOptional[T any](o *Object, name string, dst **T) {
	raw, ok := o.get(name)
	if !ok || o.err != nil || string(bytes.TrimSpace(raw)) == "null" {
		return
	}
	v := new(T)
	if err := decodeValue(raw, v); err != nil {
		o.err = under(name, err)
		return
	}
	*dst = v
}

// With decodes property name with decode when present, for values that
// plain encoding/json cannot decode (sealed interfaces).
func DecodeWith(o *Object, name string, decode func(raw json.RawMessage) error) {
	raw, ok := o.get(name)
	if !ok || o.err != nil {
		return
	}
	if err := decode(raw); err != nil {
		o.err = under(name, err)
	}
}

// Err is the first decoding problem, with its path.
func (o *Object) Err() error { return o.err }

// Discriminator returns the string value of property name of a JSON object,
// for choosing the variant of a oneOf.
func Discriminator(data []byte, name string) (string, error) {
	o := DecodeObject(data)
	if o.err != nil {
		return "", o.err
	}
	raw, ok := o.get(name)
	if !ok {
		return "", &FieldError{Path: name, Msg: "required property is missing"}
	}
	var s string
	if err := decodeValue(raw, &s); err != nil {
		return "", under(name, err)
	}
	return s, nil
}

// NotOneOf is the error for a value outside an enumeration or a oneOf
// discriminator's values.
func NotOneOf[T any](path string, value T, allowed ...T) error {
	shown := make([]string, len(allowed))
	for i, a := range allowed {
		shown[i] = show(a)
	}
	return &FieldError{Path: path, Value: show(value), Msg: "is not one of " + strings.Join(shown, ", ")}
}

// show prints a value as JSON would: strings (and named string types)
// quoted, numbers and booleans bare.
func show(v any) string {
	if rv := reflect.ValueOf(v); rv.Kind() == reflect.String {
		return strconv.Quote(rv.String())
	}
	return fmt.Sprint(v)
}

// Validator collects constraint violations; the zero value is ready.
type Validator struct {
	errs []error
}

// Errorf records a violation at path.
func (v *Validator) Errorf(path, format string, args ...any) {
	v.errs = append(v.errs, &FieldError{Path: path, Msg: fmt.Sprintf(format, args...)})
}

// Err joins every violation, nil when there were none.
func (v *Validator) Err() error { return errors.Join(v.errs...) }

// Length checks a string's length in code points against min and max
// (negative: no bound).
func (v *Validator) Length(path, s string, min, max int) {
	n := utf8.RuneCountInString(s)
	if min >= 0 && n < min {
		v.Errorf(path, "length %d is less than minLength %d", n, min)
	}
	if max >= 0 && n > max {
		v.Errorf(path, "length %d is more than maxLength %d", n, max)
	}
}

// Pattern checks that s matches re (which holds the schema's pattern).
func (v *Validator) Pattern(path, s string, re *regexp.Regexp) {
	if !re.MatchString(s) {
		v.errs = append(v.errs, &FieldError{Path: path, Value: strconv.Quote(s), Msg: "does not match pattern " + re.String()})
	}
}

// Items checks an array's length against min and max (negative: no bound).
func (v *Validator) Items(path string, n, min, max int) {
	if min >= 0 && n < min {
		v.Errorf(path, "%d items is fewer than minItems %d", n, min)
	}
	if max >= 0 && n > max {
		v.Errorf(path, "%d items is more than maxItems %d", n, max)
	}
}

// Number is the Go types generated code checks ranges on.
type Number interface{ ~int64 | ~float64 }

// Min checks x >= min (or x > min when exclusive).
func Min[N Number](v *Validator, path string, x, min N, exclusive bool) {
	if x < min || (exclusive && x == min) {
		kw := "minimum"
		if exclusive {
			kw = "exclusiveMinimum"
		}
		v.errs = append(v.errs, &FieldError{Path: path, Value: fmt.Sprint(x), Msg: fmt.Sprintf("is less than %s %v", kw, min)})
	}
}

// Max checks x <= max (or x < max when exclusive).
func Max[N Number](v *Validator, path string, x, max N, exclusive bool) {
	if x > max || (exclusive && x == max) {
		kw := "maximum"
		if exclusive {
			kw = "exclusiveMaximum"
		}
		v.errs = append(v.errs, &FieldError{Path: path, Value: fmt.Sprint(x), Msg: fmt.Sprintf("is more than %s %v", kw, max)})
	}
}

// OneOf checks that x is one of the allowed values.
func OneOf[T comparable](v *Validator, path string, x T, allowed ...T) {
	for _, a := range allowed {
		if x == a {
			return
		}
	}
	v.errs = append(v.errs, NotOneOf(path, x, allowed...))
}

// Validatable is a generated type with constraints.
type Validatable interface {
	ValidateAt(v *Validator, path string)
}

// Validate checks x and returns every violation.
func Validate(x Validatable) error {
	var v Validator
	x.ValidateAt(&v, "")
	return v.Err()
}

// Ptr returns a pointer to a copy of v, for optional fields with defaults.
func Ptr[T any](v T) *T { return &v }

// Slice decodes a JSON array whose elements need a decoder of their own
// (sealed interfaces), naming the index of a bad element.
func DecodeSlice[T any](raw json.RawMessage, dst *[]T, decode func([]byte) (T, error)) error {
	elems, ok := splitArray(raw)
	if !ok {
		if err := json.Unmarshal(raw, &elems); err != nil {
			return under("", err)
		}
	}
	out := make([]T, len(elems))
	for i, e := range elems {
		v, err := decode(e)
		if err != nil {
			return under(PathIndex("", i), err)
		}
		out[i] = v
	}
	*dst = out
	return nil
}

// Elements decodes property name, a JSON array, element by element so that
// a bad element is named by its index ("lines[2].qty").
func DecodeElements[T any](o *Object, name string, dst *[]T) {
	DecodeWith(o, name, func(raw json.RawMessage) error {
		return DecodeSlice(raw, dst, func(b []byte) (T, error) {
			var v T
			err := decodeValue(b, &v)
			return v, err
		})
	})
}

// Entries decodes property name, a JSON object used as a map, entry by
// entry so that a bad value is named by its key (`limits["daily"].max`).
func DecodeEntries[T any](o *Object, name string, dst *map[string]T) {
	DecodeWith(o, name, func(raw json.RawMessage) error {
		entries, ok := splitObject(raw)
		if !ok {
			if err := json.Unmarshal(raw, &entries); err != nil {
				return under("", err)
			}
		}
		out := make(map[string]T, len(entries))
		for _, k := range slices.Sorted(maps.Keys(entries)) {
			var v T
			if err := decodeValue(entries[k], &v); err != nil {
				return under(PathKey("", k), err)
			}
			out[k] = v
		}
		*dst = out
		return nil
	})
}

// Redact returns err with the value removed from every field error whose
// data class is not "public": classOf gives the x-data-class declared at a
// path (generated DataClass functions), looked up as prefix + "." + the
// error's path with indexes and keys as "[]"; an undeclared path takes its
// nearest declared ancestor's class, and no class at all counts as not
// public. Messages stay; only values go, replaced by their class.
func Redact(err error, prefix string, classOf func(path string) string) error {
	if err == nil {
		return nil
	}
	if joined, ok := err.(interface{ Unwrap() []error }); ok {
		var out []error
		for _, e := range joined.Unwrap() {
			out = append(out, Redact(e, prefix, classOf))
		}
		return errors.Join(out...)
	}
	fe, ok := err.(*FieldError)
	if !ok || fe.Value == "" {
		return err
	}
	class := classAt(joinPaths(prefix, elementPath.ReplaceAllString(fe.Path, "[]")), classOf)
	if class == "public" {
		return fe
	}
	if class == "" {
		class = "unclassified"
	}
	return &FieldError{Path: fe.Path, Value: "[" + class + "]", Msg: fe.Msg}
}

// ClassAt returns the data class classOf (a generated DataClass function)
// declares at path under prefix ("in", "out" or "params"), or at its
// nearest declared ancestor; "" when none is. Indexes and keys in path
// are written "[]".
func ClassAt(classOf func(path string) string, prefix, path string) string {
	return classAt(joinPaths(prefix, path), classOf)
}

var elementPath = regexp.MustCompile(`\[(\d+|"(?:[^"\\]|\\.)*")\]`)

// classAt finds the class declared at path or its nearest ancestor.
func classAt(path string, classOf func(string) string) string {
	for path != "" {
		if c := classOf(path); c != "" {
			return c
		}
		cut := max(strings.LastIndexByte(path, '.'), strings.LastIndex(path, "[]"))
		if cut <= 0 {
			return ""
		}
		if strings.HasSuffix(path, "[]") {
			path = path[:len(path)-2]
		} else {
			path = path[:cut]
		}
	}
	return ""
}
