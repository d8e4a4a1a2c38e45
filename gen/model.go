package gen

import (
	"fmt"
	"maps"
	"math/big"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/flowgen-dev/flowgen/connectorspec"
)

// kind is the shape of a Go type generated for a schema.
type kind int

const (
	kindRaw    kind = iota // json.RawMessage: any JSON value
	kindString             // string
	kindInt                // int64
	kindFloat              // float64
	kindBool               // bool
	kindTime               // time.Time (format: date-time)
	kindBytes              // []byte (format: byte / contentEncoding: base64)
	kindStruct             // a named struct
	kindEnum               // a named string type with constants
	kindSealed             // a named sealed interface (oneOf with a discriminator)
	kindSlice              // []elem
	kindMap                // map[string]elem
)

// typeRef is a use of a type: its shape, its name when named, and its element
// for slices and maps.
type typeRef struct {
	kind   kind
	name   string
	pkg    string // import path of a named type generated in a shared package
	elem   *typeRef
	schema *jsonschema.Schema // the schema the value is checked against
}

// structDef is a generated struct.
type structDef struct {
	name   string
	doc    string
	fields []fieldDef
	closed bool // additionalProperties: false
	empty  bool // declared by no schema (a connector without params)
	// variantOf and tag make the struct a variant of sealed interfaces
	// whose discriminator property (tag) must equal tagValue.
	variantOf     []string
	tag, tagValue string
}

// fieldDef is one property of a struct.
type fieldDef struct {
	goName, jsonName string
	doc              string
	typ              typeRef
	required         bool
	dataClass        string
	def              *any // schema default, scalars only
}

// optional reports whether the field is a pointer: optional fields are
// pointers, except slices, maps, raw JSON and sealed interfaces, which are
// nil when absent.
func (f fieldDef) optional() bool {
	if f.required {
		return false
	}
	switch f.typ.kind {
	case kindSlice, kindMap, kindRaw, kindSealed, kindBytes:
		return false
	}
	return true
}

// enumDef is a generated string enum.
type enumDef struct {
	name   string
	doc    string
	values []string
}

// sealedDef is a generated sealed interface over variant structs.
type sealedDef struct {
	name     string
	doc      string
	tag      string
	variants []string // struct names, in schema order
	values   []string // discriminator values, parallel to variants
}

// aliasDef is a root type that is another named type (a port whose schema
// is a $ref): type Input = Order.
type aliasDef struct {
	name, target, doc string
	targetPkg         string
}

// model is every type of one connector, in the order they are first met,
// which is the order they are emitted in.
type model struct {
	structs []*structDef
	enums   []*enumDef
	seals   []*sealedDef
	aliases []aliasDef
	order   []string // names in emission order

	byLocation map[string]string // schema location -> type name
	taken      map[string]bool
	// dataClasses maps "port.path" to the x-data-class written there.
	dataClasses map[string]string
	problems    []problem

	// home is the directory whose schemas become local types; schemas in
	// other directories come from their shared package (nil: all local).
	home   string
	shared *sharedSet
}

func newModel() *model {
	return &model{byLocation: map[string]string{}, taken: map[string]bool{}, dataClasses: map[string]string{}}
}

// external returns the shared-package type a schema reached through a $ref
// is, when it lives in a directory other than the model's home.
func (m *model) external(target *jsonschema.Schema) (typeRef, bool) {
	if m.shared == nil || target.Location == "" {
		return typeRef{}, false
	}
	dir := locationDir(target.Location)
	if dir == "" || dir == m.home {
		return typeRef{}, false
	}
	pkg, err := m.shared.get(dir)
	if err != nil {
		m.problems = append(m.problems, problemOf(err))
		return typeRef{}, false
	}
	name, ok := pkg.m.byLocation[target.Location]
	if !ok {
		return typeRef{}, false
	}
	t := pkg.m.lookup(name, target)
	t.pkg = pkg.importPath
	return t, true
}

// reserve claims a unique type name, suffixing 2, 3, ... on collision.
func (m *model) reserve(name string) string {
	base, n := name, 1
	for m.taken[name] {
		n++
		name = base + strconv.Itoa(n)
	}
	m.taken[name] = true
	m.order = append(m.order, name)
	return name
}

// deref follows $refs that carry no other keywords.
func deref(s *jsonschema.Schema) *jsonschema.Schema {
	for s != nil && s.Ref != nil && onlyRef(s) {
		s = s.Ref
	}
	return s
}

func onlyRef(s *jsonschema.Schema) bool {
	return s.Types == nil && len(s.Properties) == 0 && s.Items2020 == nil && s.Enum == nil && len(s.OneOf) == 0
}

// refName is the name a schema reached through a $ref is known by: its
// title, else the last segment of its JSON pointer, else its file name
// without extensions (order.schema.json -> Order).
func refName(s *jsonschema.Schema) string {
	if s.Title != "" {
		return goName(s.Title)
	}
	loc := s.Location
	file, frag, _ := strings.Cut(loc, "#")
	if frag != "" {
		return goName(path.Base(frag))
	}
	base := path.Base(file)
	base, _, _ = strings.Cut(base, ".")
	return goName(base)
}

// root adds the type of a port or params schema under name and returns its
// use. A schema that is a $ref to a named type becomes an alias.
func (m *model) root(name, classPrefix, doc string, s *jsonschema.Schema) typeRef {
	if s == nil {
		m.structs = append(m.structs, &structDef{name: m.reserve(name), empty: true})
		return typeRef{kind: kindStruct, name: name}
	}
	if s.Ref != nil && onlyRef(s) {
		target := m.typeOf(refName(deref(s)), classPrefix, s)
		if target.kind == kindStruct || target.kind == kindEnum {
			m.aliases = append(m.aliases, aliasDef{name: m.reserve(name), target: target.name, targetPkg: target.pkg, doc: doc})
			return typeRef{kind: target.kind, name: name, schema: target.schema}
		}
		m.problems = append(m.problems, problem{msg: fmt.Sprintf("%s: the schema must be an object", name)})
		return target
	}
	t := m.typeOfNamed(name, classPrefix, s, doc)
	if t.kind != kindStruct {
		m.problems = append(m.problems, problem{msg: fmt.Sprintf("%s: a port or params schema must be an object (type: object with properties), not %s", name, describeKind(t.kind))})
	}
	return t
}

func describeKind(k kind) string {
	switch k {
	case kindSealed:
		return "a oneOf"
	case kindSlice:
		return "an array"
	case kindMap:
		return "a map"
	case kindRaw:
		return "an untyped value"
	}
	return "a scalar"
}

// typeOf returns the use of schema s, reached under the suggested name,
// defining named types on first sight. classPrefix is the data-class path.
func (m *model) typeOf(suggested, classPrefix string, s *jsonschema.Schema) typeRef {
	if s == nil {
		return typeRef{kind: kindRaw}
	}
	if a, ok := connectorspec.AnnotationsOf(s); ok && a.DataClass != "" && classPrefix != "" {
		m.dataClasses[classPrefix] = a.DataClass
	}
	if s.Ref != nil && onlyRef(s) {
		target := deref(s)
		if a, ok := connectorspec.AnnotationsOf(target); ok && a.DataClass != "" && classPrefix != "" {
			if _, set := m.dataClasses[classPrefix]; !set {
				m.dataClasses[classPrefix] = a.DataClass
			}
		}
		if t, ok := m.external(target); ok {
			m.classesOf(classPrefix, target, 0)
			return t
		}
		return m.typeOfNamed(refName(target), classPrefix, target, "")
	}
	return m.typeOfNamed(suggested, classPrefix, s, "")
}

// typeOfNamed is typeOf once the name is chosen.
func (m *model) typeOfNamed(name, classPrefix string, s *jsonschema.Schema, doc string) typeRef {
	if doc == "" {
		doc = s.Description
	}
	if existing, ok := m.byLocation[s.Location]; ok && s.Location != "" {
		return m.lookup(existing, s)
	}
	if len(s.OneOf) > 0 {
		if sd := m.sealed(name, classPrefix, s, doc); sd != nil {
			return typeRef{kind: kindSealed, name: sd.name, schema: s}
		}
		return typeRef{kind: kindRaw, schema: s}
	}
	types := typeNames(s)
	switch {
	case len(types) != 1:
		return typeRef{kind: kindRaw, schema: s}
	case types[0] == "object":
		if len(s.Properties) == 0 {
			if ap, ok := s.AdditionalProperties.(*jsonschema.Schema); ok {
				elem := m.typeOf(name+"Value", classPrefix+"[]", ap)
				return typeRef{kind: kindMap, elem: &elem, schema: s}
			}
			return typeRef{kind: kindMap, elem: &typeRef{kind: kindRaw}, schema: s}
		}
		sd := &structDef{name: m.reserve(name), doc: doc}
		if s.Location != "" {
			m.byLocation[s.Location] = sd.name
		}
		m.structs = append(m.structs, sd)
		if b, ok := s.AdditionalProperties.(bool); ok && !b {
			sd.closed = true
		}
		required := map[string]bool{}
		for _, r := range s.Required {
			required[r] = true
		}
		for _, prop := range sortedProps(s) {
			ps := s.Properties[prop]
			f := fieldDef{goName: goName(prop), jsonName: prop, required: required[prop]}
			f.typ = m.typeOf(sd.name+goName(prop), joinClass(classPrefix, prop), ps)
			d := deref(ps)
			f.doc = cmpOr(ps.Description, d.Description)
			if a, ok := connectorspec.AnnotationsOf(ps); ok {
				f.dataClass = a.DataClass
			}
			if ps.Default != nil {
				f.def = ps.Default
			}
			sd.fields = append(sd.fields, f)
		}
		dedupeFieldNames(sd)
		return typeRef{kind: kindStruct, name: sd.name, schema: s}
	case types[0] == "array":
		elem := typeRef{kind: kindRaw}
		if s.Items2020 != nil {
			elem = m.typeOf(name+"Item", classPrefix+"[]", s.Items2020)
		}
		return typeRef{kind: kindSlice, elem: &elem, schema: s}
	case types[0] == "string":
		if s.Enum != nil && allStrings(s.Enum.Values) {
			ed := &enumDef{name: m.reserve(name), doc: doc}
			for _, v := range s.Enum.Values {
				ed.values = append(ed.values, v.(string))
			}
			if s.Location != "" {
				m.byLocation[s.Location] = ed.name
			}
			m.enums = append(m.enums, ed)
			return typeRef{kind: kindEnum, name: ed.name, schema: s}
		}
		a, _ := connectorspec.AnnotationsOf(s)
		if a.Format == "date-time" {
			return typeRef{kind: kindTime, schema: s}
		}
		if a.Format == "byte" || a.ContentEncoding == "base64" {
			return typeRef{kind: kindBytes, schema: s}
		}
		return typeRef{kind: kindString, schema: s}
	case types[0] == "integer":
		return typeRef{kind: kindInt, schema: s}
	case types[0] == "number":
		return typeRef{kind: kindFloat, schema: s}
	case types[0] == "boolean":
		return typeRef{kind: kindBool, schema: s}
	}
	return typeRef{kind: kindRaw, schema: s}
}

// lookup returns the use of an already defined named type.
func (m *model) lookup(name string, s *jsonschema.Schema) typeRef {
	for _, e := range m.enums {
		if e.name == name {
			return typeRef{kind: kindEnum, name: name, schema: s}
		}
	}
	for _, sd := range m.seals {
		if sd.name == name {
			return typeRef{kind: kindSealed, name: name, schema: s}
		}
	}
	return typeRef{kind: kindStruct, name: name, schema: s}
}

// sealed defines a sealed interface for a oneOf whose variants are objects
// that share one required string property with a distinct const value in
// each; nil when the oneOf has no such discriminator.
func (m *model) sealed(name, classPrefix string, s *jsonschema.Schema, doc string) *sealedDef {
	variants := make([]*jsonschema.Schema, len(s.OneOf))
	for i, v := range s.OneOf {
		variants[i] = deref(v)
	}
	tag := discriminator(variants)
	if tag == "" {
		return nil
	}
	sd := &sealedDef{name: m.reserve(name), doc: doc, tag: tag}
	if s.Location != "" {
		m.byLocation[s.Location] = sd.name
	}
	m.seals = append(m.seals, sd)
	for i, v := range variants {
		value := constString(v.Properties[tag])
		vname := name + goName(value)
		if s.OneOf[i] != v || v.Title != "" {
			vname = refName(v)
		}
		t := m.typeOfNamed(vname, classPrefix, v, "")
		for _, st := range m.structs {
			if st.name == t.name {
				if !slices.Contains(st.variantOf, sd.name) {
					st.variantOf = append(st.variantOf, sd.name)
				}
				st.tag, st.tagValue = tag, value
			}
		}
		sd.variants = append(sd.variants, t.name)
		sd.values = append(sd.values, value)
	}
	return sd
}

// discriminator finds the property every variant requires with a distinct
// const string value.
func discriminator(variants []*jsonschema.Schema) string {
	if len(variants) == 0 {
		return ""
	}
	for _, cand := range sortedProps(variants[0]) {
		seen := map[string]bool{}
		ok := true
		for _, v := range variants {
			val := constString(v.Properties[cand])
			if val == "" || seen[val] || !slices.Contains(v.Required, cand) {
				ok = false
				break
			}
			seen[val] = true
		}
		if ok {
			return cand
		}
	}
	return ""
}

// constString is the value of a const (or single-value enum) string schema.
func constString(s *jsonschema.Schema) string {
	if s == nil {
		return ""
	}
	if s.Const != nil {
		if v, ok := (*s.Const).(string); ok {
			return v
		}
	}
	if s.Enum != nil && len(s.Enum.Values) == 1 {
		if v, ok := s.Enum.Values[0].(string); ok {
			return v
		}
	}
	return ""
}

func typeNames(s *jsonschema.Schema) []string {
	if s.Types == nil {
		if constString(s) != "" {
			return []string{"string"}
		}
		if len(s.Properties) > 0 {
			return []string{"object"}
		}
		return nil
	}
	var out []string
	for _, t := range s.Types.ToStrings() {
		if t != "null" {
			out = append(out, t)
		}
	}
	return out
}

func allStrings(vs []any) bool {
	for _, v := range vs {
		if _, ok := v.(string); !ok {
			return false
		}
	}
	return len(vs) > 0
}

func sortedProps(s *jsonschema.Schema) []string {
	return sortedKeysOf(s.Properties)
}

// dedupeFieldNames suffixes Go field names that two JSON names map to.
func dedupeFieldNames(sd *structDef) {
	seen := map[string]int{}
	for i := range sd.fields {
		n := sd.fields[i].goName
		seen[n]++
		if seen[n] > 1 {
			sd.fields[i].goName = n + strconv.Itoa(seen[n])
		}
	}
}

func joinClass(prefix, prop string) string {
	if prefix == "" {
		return prop
	}
	return prefix + "." + prop
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// ratLiteral renders a schema bound for a Go value of kind k.
func ratLiteral(r *big.Rat, k kind) (int64, float64, bool) {
	if k == kindInt {
		if r.IsInt() && r.Num().IsInt64() {
			return r.Num().Int64(), 0, true
		}
		// A fractional bound on an integer: round towards the allowed side
		// is the caller's job; report it as a float.
	}
	f, _ := r.Float64()
	return 0, f, false
}

func sortedKeysOf[V any](m map[string]V) []string { return slices.Sorted(maps.Keys(m)) }

// classesOf records the data classes inside a schema whose types live
// elsewhere, so the connector's DataClass table still covers every path.
func (m *model) classesOf(prefix string, s *jsonschema.Schema, depth int) {
	if s == nil || depth > 16 {
		return
	}
	if a, ok := connectorspec.AnnotationsOf(s); ok && a.DataClass != "" {
		if _, set := m.dataClasses[prefix]; !set {
			m.dataClasses[prefix] = a.DataClass
		}
	}
	if s.Ref != nil {
		m.classesOf(prefix, s.Ref, depth+1)
	}
	for _, name := range sortedProps(s) {
		m.classesOf(joinClass(prefix, name), s.Properties[name], depth+1)
	}
	if s.Items2020 != nil {
		m.classesOf(prefix+"[]", s.Items2020, depth+1)
	}
	if ap, ok := s.AdditionalProperties.(*jsonschema.Schema); ok {
		m.classesOf(prefix+"[]", ap, depth+1)
	}
	for _, v := range s.OneOf {
		m.classesOf(prefix, v, depth+1)
	}
}

// locationDir is the directory of a file:// schema location.
func locationDir(loc string) string {
	file, _, _ := strings.Cut(loc, "#")
	p, ok := strings.CutPrefix(file, "file://")
	if !ok {
		return ""
	}
	return filepath.Dir(filepath.FromSlash(p))
}
