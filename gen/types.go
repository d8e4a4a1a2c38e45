//lint:file-ignore ST1001 jennifer is a code-building DSL meant to be dot-imported.

package gen

import (
	"fmt"
	"math/big"
	"path"
	"regexp"
	"strings"

	. "github.com/dave/jennifer/jen"
	"github.com/flowgen-dev/flowgen/connectorspec"
)

const jsonPkg = "encoding/json"

// reservedMethods are the method names generated types carry; a property
// whose Go name would collide gets a Field suffix.
var reservedMethods = map[string]bool{"Validate": true, "ValidateAt": true, "UnmarshalJSON": true, "MarshalJSON": true}

// typesEmitter writes the type declarations of a model into a file.
type typesEmitter struct {
	f            *File
	m            *model
	patterns     map[string]string // pattern source -> variable name
	patternDecls []Code
	problems     []string
}

// decoderOf names the Decode function of a sealed interface.
func decoderOf(t typeRef) *Statement {
	if t.pkg != "" {
		return Qual(t.pkg, "Decode"+t.name)
	}
	return Id("Decode" + t.name)
}

// emitTypes adds every type of m to f, in the order they were first met,
// and for a connector (classes) the DataClass table.
func emitTypes(f *File, m *model, classes bool) []string {
	e := &typesEmitter{f: f, m: m, patterns: map[string]string{}}
	for _, name := range m.order {
		e.emitNamed(name)
	}
	if classes {
		e.emitDataClasses()
	}
	if len(e.patternDecls) > 0 {
		e.f.Line()
		e.f.Comment("The schemas' patterns, compiled once.")
		e.f.Var().Defs(e.patternDecls...)
	}
	return e.problems
}

func (e *typesEmitter) emitNamed(name string) {
	for _, a := range e.m.aliases {
		if a.name == name {
			target := a.target
			if a.targetPkg != "" {
				target = path.Base(a.targetPkg) + "." + a.target
			}
			e.f.Add(docComment(a.doc, fmt.Sprintf("%s is %s; the port's schema is a $ref to it.", a.name, target)))
			e.f.Type().Id(a.name).Op("=").Add(goType(typeRef{kind: kindStruct, name: a.target, pkg: a.targetPkg}))
			return
		}
	}
	for _, sd := range e.m.structs {
		if sd.name == name {
			e.emitStruct(sd)
			return
		}
	}
	for _, ed := range e.m.enums {
		if ed.name == name {
			e.emitEnum(ed)
			return
		}
	}
	for _, sd := range e.m.seals {
		if sd.name == name {
			e.emitSealed(sd)
			return
		}
	}
}

// docComment renders a doc comment: the first sentence names the
// declaration, the schema description follows as its own paragraph.
func docComment(description, first string) Code {
	var lines []string
	if first != "" {
		lines = append(lines, wrap(first)...)
	}
	if d := strings.TrimSpace(description); d != "" {
		lines = append(lines, "")
		lines = append(lines, strings.Split(d, "\n")...)
	}
	var g Statement
	for i, l := range lines {
		if i > 0 {
			g = append(g, Line())
		}
		g = append(g, Comment(l))
	}
	return &g
}

// goType renders the Go type of a use.
func goType(t typeRef) *Statement {
	switch t.kind {
	case kindString:
		return String()
	case kindInt:
		return Int64()
	case kindFloat:
		return Float64()
	case kindBool:
		return Bool()
	case kindTime:
		return Qual("time", "Time")
	case kindBytes:
		return Index().Byte()
	case kindStruct, kindEnum, kindSealed:
		if t.pkg != "" {
			return Qual(t.pkg, t.name)
		}
		return Id(t.name)
	case kindSlice:
		return Index().Add(goType(*t.elem))
	case kindMap:
		return Map(String()).Add(goType(*t.elem))
	}
	return Qual(jsonPkg, "RawMessage")
}

func (e *typesEmitter) emitStruct(sd *structDef) {
	for i := range sd.fields {
		if reservedMethods[sd.fields[i].goName] {
			sd.fields[i].goName += "Field"
		}
	}
	first := fmt.Sprintf("%s is generated from the JSON Schema at %s.", sd.name, e.where(sd))
	if sd.empty {
		first = fmt.Sprintf("%s is empty: the spec declares none.", sd.name)
	}
	if len(sd.variantOf) > 0 {
		first = fmt.Sprintf("%s is the variant of %s whose %q is %q.", sd.name, strings.Join(sd.variantOf, " and "), sd.tag, sd.tagValue)
	}
	e.f.Add(docComment(sd.doc, first))
	var fields []Code
	for i, fd := range sd.fields {
		if i > 0 && fd.doc != "" {
			fields = append(fields, Line())
		}
		if fd.doc != "" {
			fields = append(fields, docComment(fd.doc, ""))
		}
		typ := goType(fd.typ)
		tag := fd.jsonName
		if fd.optional() {
			typ = Op("*").Add(typ)
		}
		if !fd.required {
			tag += ",omitempty"
		}
		fields = append(fields, Id(fd.goName).Add(typ).Tag(map[string]string{"json": tag}))
	}
	e.f.Type().Id(sd.name).Struct(fields...)
	e.f.Line()
	if len(sd.fields) == 0 && len(sd.variantOf) == 0 {
		return
	}
	e.emitUnmarshal(sd)
	e.emitValidate(sd)
	if len(sd.variantOf) > 0 {
		for _, iface := range sd.variantOf {
			e.f.Func().Params(Op("*").Id(sd.name)).Id("is" + iface).Params().Block()
			e.f.Line()
		}
		e.f.Comment(fmt.Sprintf("MarshalJSON encodes x with %q set to %q, whatever the field holds.", sd.tag, sd.tagValue))
		tagField := ""
		for _, fd := range sd.fields {
			if fd.jsonName == sd.tag {
				tagField = fd.goName
			}
		}
		e.f.Func().Params(Id("x").Id(sd.name)).Id("MarshalJSON").Params().Params(Index().Byte(), Error()).Block(
			Type().Id("plain").Id(sd.name),
			Id("x").Dot(tagField).Op("=").Lit(sd.tagValue),
			Return(Qual(jsonPkg, "Marshal").Call(Id("plain").Call(Id("x")))),
		)
	}
}

// where says where a struct's schema is, without machine-specific paths:
// a schema file name, or the spec file and the port inside it.
func (e *typesEmitter) where(sd *structDef) string {
	for loc, name := range e.m.byLocation {
		if name != sd.name {
			continue
		}
		file, frag, _ := strings.Cut(loc, "#")
		base := path.Base(file)
		if m := inlineLocation.FindStringSubmatch(base); m != nil {
			return m[1] + "#/" + strings.ReplaceAll(m[2], ".", "/") + frag
		}
		if frag != "" {
			return base + "#" + frag
		}
		return base
	}
	return connectorspec.FileName
}

var inlineLocation = regexp.MustCompile(`^\.(.+\.ya?ml)\.(.+)\.json$`)

func (e *typesEmitter) emitUnmarshal(sd *structDef) {
	var body []Code
	body = append(body, Id("o").Op(":=").Qual(runtimePkg, "DecodeObject").Call(Id("data")))
	var required, known []Code
	defaults := Dict{}
	for _, fd := range sd.fields {
		known = append(known, Lit(fd.jsonName))
		if fd.required {
			required = append(required, Lit(fd.jsonName))
		} else if fd.def != nil {
			if lit := e.defaultValue(fd); lit != nil {
				defaults[Id(fd.goName)] = lit
			}
		}
	}
	if len(required) > 0 {
		body = append(body, Id("o").Dot("Required").Call(required...))
	}
	if sd.closed {
		body = append(body, Id("o").Dot("Closed").Call(known...))
	}
	body = append(body, Op("*").Id("x").Op("=").Id(sd.name).Values(defaults))
	for _, fd := range sd.fields {
		field := Op("&").Id("x").Dot(fd.goName)
		switch {
		case fd.typ.kind == kindSealed:
			body = append(body, Qual(runtimePkg, "DecodeWith").Call(Id("o"), Lit(fd.jsonName),
				Func().Params(Id("raw").Qual(jsonPkg, "RawMessage")).Params(Id("err").Error()).Block(
					List(Id("x").Dot(fd.goName), Err()).Op("=").Add(decoderOf(fd.typ)).Call(Id("raw")),
					Return(),
				)))
		case fd.typ.kind == kindSlice && fd.typ.elem.kind == kindSealed:
			body = append(body, Qual(runtimePkg, "DecodeWith").Call(Id("o"), Lit(fd.jsonName),
				Func().Params(Id("raw").Qual(jsonPkg, "RawMessage")).Error().Block(
					Return(Qual(runtimePkg, "DecodeSlice").Call(Id("raw"), field, decoderOf(*fd.typ.elem))),
				)))
		case fd.typ.kind == kindSlice:
			body = append(body, Qual(runtimePkg, "DecodeElements").Call(Id("o"), Lit(fd.jsonName), field))
		case fd.typ.kind == kindMap:
			body = append(body, Qual(runtimePkg, "DecodeEntries").Call(Id("o"), Lit(fd.jsonName), field))
		case fd.optional():
			body = append(body, Qual(runtimePkg, "DecodeOptional").Call(Id("o"), Lit(fd.jsonName), field))
		default:
			body = append(body, Qual(runtimePkg, "DecodeField").Call(Id("o"), Lit(fd.jsonName), field))
		}
	}
	body = append(body, Return(Id("o").Dot("Err").Call()))
	doc := "UnmarshalJSON decodes x strictly: a missing required property"
	if sd.closed {
		doc += ", a property the schema does not allow"
	}
	doc += " or a value of the wrong type is an error naming its path. Absent optional properties take their schema defaults."
	e.f.Add(docComment("", doc))
	e.f.Func().Params(Id("x").Op("*").Id(sd.name)).Id("UnmarshalJSON").Params(Id("data").Index().Byte()).Error().Block(body...)
	e.f.Line()
}

// defaultValue renders a scalar default, or records why it cannot.
func (e *typesEmitter) defaultValue(fd fieldDef) Code {
	v := *fd.def
	var lit Code
	switch fd.typ.kind {
	case kindString:
		if s, ok := v.(string); ok {
			lit = Lit(s)
		}
	case kindEnum:
		if s, ok := v.(string); ok {
			lit = Id(fd.typ.name).Call(Lit(s))
		}
	case kindBool:
		if b, ok := v.(bool); ok {
			lit = Lit(b)
		}
	case kindInt:
		if n, ok := number(v); ok && n == float64(int64(n)) {
			lit = Lit(int64(n))
		}
	case kindFloat:
		if n, ok := number(v); ok {
			lit = Lit(n)
		}
	}
	if lit == nil {
		e.problems = append(e.problems, fmt.Sprintf("%s: default %v is not supported for this type (defaults must be scalars of the property's type)", fd.jsonName, v))
		return nil
	}
	return Qual(runtimePkg, "Ptr").Call(lit)
}

func number(v any) (float64, bool) {
	switch n := v.(type) {
	case float64:
		return n, true
	case int:
		return float64(n), true
	case int64:
		return float64(n), true
	case fmt.Stringer: // json.Number, *big.Rat
		var f float64
		_, err := fmt.Sscan(n.String(), &f)
		return f, err == nil
	}
	return 0, false
}

func (e *typesEmitter) emitValidate(sd *structDef) {
	e.f.Comment("Validate reports every schema constraint x breaks, each with its path.")
	e.f.Func().Params(Id("x").Op("*").Id(sd.name)).Id("Validate").Params().Error().Block(
		Return(Qual(runtimePkg, "Validate").Call(Id("x"))),
	)
	e.f.Line()
	var body []Code
	for _, fd := range sd.fields {
		p := Qual(runtimePkg, "PathJoin").Call(Id("path"), Lit(fd.jsonName))
		val := Id("x").Dot(fd.goName)
		if !fd.optional() {
			body = append(body, e.checks(fd.typ, val, p, 0)...)
			continue
		}
		var inner []Code
		switch fd.typ.kind {
		case kindStruct, kindEnum:
			inner = e.checks(fd.typ, Id("x").Dot(fd.goName), p, 0)
		default:
			inner = e.checks(fd.typ, Op("*").Id("x").Dot(fd.goName), p, 0)
		}
		if len(inner) > 0 {
			body = append(body, If(Id("x").Dot(fd.goName).Op("!=").Nil()).Block(inner...))
		}
	}
	e.f.Comment("ValidateAt records the violations of x, located below path, in v.")
	e.f.Func().Params(Id("x").Op("*").Id(sd.name)).Id("ValidateAt").Params(
		Id("v").Op("*").Qual(runtimePkg, "Validator"), Id("path").String()).Block(body...)
	e.f.Line()
}

// checks returns the statements that check value (an addressable
// expression) of type t at path p; depth names loop variables.
func (e *typesEmitter) checks(t typeRef, value, p *Statement, depth int) []Code {
	s := t.schema
	var out []Code
	switch t.kind {
	case kindStruct, kindEnum:
		out = append(out, value.Clone().Dot("ValidateAt").Call(Id("v"), p))
	case kindSealed:
		out = append(out, If(value.Clone().Op("!=").Nil()).Block(value.Clone().Dot("ValidateAt").Call(Id("v"), p)))
	case kindString:
		if s == nil {
			break
		}
		if s.MinLength != nil || s.MaxLength != nil {
			out = append(out, Id("v").Dot("Length").Call(p, value, Lit(bound(s.MinLength)), Lit(bound(s.MaxLength))))
		}
		if s.Pattern != nil {
			out = append(out, Id("v").Dot("Pattern").Call(p, value, Id(e.pattern(s.Pattern.String()))))
		}
		if c := constString(s); c != "" && s.Enum == nil {
			out = append(out, Qual(runtimePkg, "OneOf").Call(Id("v"), p, value, Lit(c)))
		}
	case kindInt, kindFloat:
		if s == nil {
			break
		}
		for _, b := range []struct {
			fn        string
			exclusive bool
			rat       *big.Rat
		}{{"Min", false, s.Minimum}, {"Min", true, s.ExclusiveMinimum}, {"Max", false, s.Maximum}, {"Max", true, s.ExclusiveMaximum}} {
			if b.rat == nil {
				continue
			}
			n, f, isInt := ratLiteral(b.rat, t.kind)
			var lit Code = Lit(f)
			if isInt {
				lit = Lit(n)
			}
			if t.kind == kindInt && !isInt {
				lit = Lit(f)
				out = append(out, Qual(runtimePkg, b.fn).Call(Id("v"), p, Float64().Call(value), lit, Lit(b.exclusive)))
				continue
			}
			out = append(out, Qual(runtimePkg, b.fn).Call(Id("v"), p, value, lit, Lit(b.exclusive)))
		}
	case kindSlice:
		if s != nil && (s.MinItems != nil || s.MaxItems != nil) {
			out = append(out, Id("v").Dot("Items").Call(p, Len(value), Lit(bound(s.MinItems)), Lit(bound(s.MaxItems))))
		}
		i := loopVar("i", depth)
		inner := e.checks(*t.elem, value.Clone().Index(Id(i)), Qual(runtimePkg, "PathIndex").Call(p, Id(i)), depth+1)
		if len(inner) > 0 {
			out = append(out, For(Id(i).Op(":=").Range().Add(value)).Block(inner...))
		}
	case kindMap:
		k, val := loopVar("k", depth), loopVar("val", depth)
		inner := e.checks(*t.elem, Id(val), Qual(runtimePkg, "PathKey").Call(p, Id(k)), depth+1)
		if len(inner) > 0 {
			body := append([]Code{Id(val).Op(":=").Add(value.Clone().Index(Id(k)))}, inner...)
			out = append(out, For(List(Id("_"), Id(k)).Op(":=").Range().Qual("slices", "Sorted").Call(
				Qual("maps", "Keys").Call(value))).Block(body...))
		}
	}
	return out
}

func loopVar(base string, depth int) string {
	if depth == 0 {
		return base
	}
	return fmt.Sprintf("%s%d", base, depth)
}

func bound(n *int) int {
	if n == nil {
		return -1
	}
	return *n
}

// pattern returns the package variable holding a compiled pattern,
// declaring it on first use.
func (e *typesEmitter) pattern(src string) string {
	if name, ok := e.patterns[src]; ok {
		return name
	}
	if _, err := regexp.Compile(src); err != nil {
		e.problems = append(e.problems, fmt.Sprintf("pattern %q is not supported by Go's regexp package: %v", src, err))
	}
	name := fmt.Sprintf("pattern%d", len(e.patterns)+1)
	e.patterns[src] = name
	e.patternDecls = append(e.patternDecls, Id(name).Op("=").Qual("regexp", "MustCompile").Call(Lit(src)))
	return name
}

func (e *typesEmitter) emitEnum(ed *enumDef) {
	e.f.Add(docComment(ed.doc, fmt.Sprintf("%s is one of the values the schema enumerates.", ed.name)))
	e.f.Type().Id(ed.name).String()
	e.f.Line()
	var consts []Code
	var values []Code
	seen := map[string]int{}
	for _, v := range ed.values {
		name := ed.name + suffixName(v)
		seen[name]++
		if seen[name] > 1 {
			name = fmt.Sprintf("%s%d", name, seen[name])
		}
		consts = append(consts, Id(name).Id(ed.name).Op("=").Lit(v))
		values = append(values, Id(name))
	}
	e.f.Comment(fmt.Sprintf("The values of %s, in schema order.", ed.name))
	e.f.Const().Defs(consts...)
	e.f.Line()
	e.f.Comment("Values lists every allowed value, in schema order.")
	e.f.Func().Params(Id(ed.name)).Id("Values").Params().Index().Id(ed.name).Block(
		Return(Index().Id(ed.name).Values(values...)),
	)
	e.f.Line()
	e.f.Comment("ValidateAt records x, located at path, in v when it is not an allowed value.")
	e.f.Func().Params(Id("x").Id(ed.name)).Id("ValidateAt").Params(
		Id("v").Op("*").Qual(runtimePkg, "Validator"), Id("path").String()).Block(
		Qual(runtimePkg, "OneOf").Call(Id("v"), Id("path"), Id("x"), Id("x").Dot("Values").Call().Op("...")),
	)
	e.f.Line()
}

func (e *typesEmitter) emitSealed(sd *sealedDef) {
	var alts []string
	for i, v := range sd.variants {
		alts = append(alts, fmt.Sprintf("*%s (%s %q)", v, sd.tag, sd.values[i]))
	}
	e.f.Add(docComment(sd.doc, fmt.Sprintf("%s is exactly one of %s; no other type implements it.", sd.name, strings.Join(alts, ", "))))
	e.f.Type().Id(sd.name).Interface(
		Id("is"+sd.name).Params(),
		Qual(runtimePkg, "Validatable"),
	)
	e.f.Line()
	var cases []Code
	for i, v := range sd.variants {
		cases = append(cases, Case(Lit(sd.values[i])).Block(Id("v").Op("=").New(Id(v))))
	}
	var allowed []Code
	for _, v := range sd.values {
		allowed = append(allowed, Lit(v))
	}
	cases = append(cases, Default().Block(Return(Nil(), Qual(runtimePkg, "NotOneOf").Call(append([]Code{Lit(sd.tag), Id("tag")}, allowed...)...))))
	e.f.Comment(fmt.Sprintf("Decode%s decodes the variant that data's %q property names.", sd.name, sd.tag))
	e.f.Func().Id("Decode"+sd.name).Params(Id("data").Index().Byte()).Params(Id(sd.name), Error()).Block(
		List(Id("tag"), Err()).Op(":=").Qual(runtimePkg, "Discriminator").Call(Id("data"), Lit(sd.tag)),
		If(Err().Op("!=").Nil()).Block(Return(Nil(), Err())),
		Var().Id("v").Id(sd.name),
		Switch(Id("tag")).Block(cases...),
		If(Err().Op(":=").Qual(jsonPkg, "Unmarshal").Call(Id("data"), Id("v")), Err().Op("!=").Nil()).Block(Return(Nil(), Err())),
		Return(Id("v"), Nil()),
	)
	e.f.Line()
}

// emitDataClasses writes DataClass, the table logs redact by.
func (e *typesEmitter) emitDataClasses() {
	paths := sortedKeysOf(e.m.dataClasses)
	var cases []Code
	for _, p := range paths {
		cases = append(cases, Case(Lit(p)).Block(Return(Lit(e.m.dataClasses[p]))))
	}
	e.f.Comment(`DataClass returns the x-data-class declared for the value at path, "" when none is.`)
	e.f.Comment(`Paths start with "params" or the port name and use "[]" for elements:`)
	e.f.Comment(`"in.customer.email", "in.lines[].sku". Logs show only "public" values.`)
	e.f.Func().Id("DataClass").Params(Id("path").String()).String().Block(
		Switch(Id("path")).Block(cases...),
		Return(Lit("")),
	)
}

// wrap splits text into comment lines of at most 77 columns.
func wrap(text string) []string {
	var lines []string
	line := ""
	for _, w := range strings.Fields(text) {
		if line != "" && len(line)+1+len(w) > 77 {
			lines = append(lines, line)
			line = ""
		}
		if line != "" {
			line += " "
		}
		line += w
	}
	if line != "" {
		lines = append(lines, line)
	}
	return lines
}
