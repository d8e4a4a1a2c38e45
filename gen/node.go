//lint:file-ignore ST1001 jennifer is a code-building DSL meant to be dot-imported.

package gen

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	. "github.com/dave/jennifer/jen"

	"github.com/flowgen-dev/flowgen/connectorspec"
	"github.com/flowgen-dev/flowgen/flowtype"
)

const runtimePkg = "github.com/flowgen-dev/flowgen/runtime"

// nodeEmitter writes the node file: metadata, the manifest, the capability-gated context and NewNode.
type nodeEmitter struct {
	f       *File
	spec    *connectorspec.Spec
	in, out typeRef
	m       *model
	// inPort and outPort name the ports the node reads and writes, the
	// prefixes of their paths in DataClass.
	inPort, outPort string
	problems        []string
}

func (e *nodeEmitter) emit(manifest []byte) {
	s := e.spec
	e.f.Comment("Metadata declared in " + specBase(s) + ".")
	defs := []Code{
		Comment("ID is the connector id."),
		Id("ID").Op("=").Lit(s.ID),
		Comment("Version is the connector version."),
		Id("Version").Op("=").Lit(s.Version),
		Comment("Effects is what the connector may do to the world."),
		Id("Effects").Op("=").Qual(runtimePkg, s.Effects.String()),
		Comment("Determinism is how reproducible its output is."),
		Id("Determinism").Op("=").Qual(runtimePkg, s.Determinism.String()),
		Comment("RetryOwner is the single layer that retries failed calls."),
		Id("RetryOwner").Op("=").Qual(runtimePkg, retryOwnerConst(s)),
		Comment("KeySchema names the idempotency key schema: id@major version."),
		Id("KeySchema").Op("=").Lit(s.KeySchema()),
	}
	if s.Idempotency != nil {
		defs = append(defs,
			Comment("IdempotencyScope is what a key is unique within."),
			Id("IdempotencyScope").Op("=").Qual(runtimePkg, "Scope"+s.Idempotency.Scope.String()),
			Comment("IdempotencyTTL is how long a key is remembered."),
			Id("IdempotencyTTL").Op("=").Add(durationCode(time.Duration(s.Idempotency.TTL))))
	}
	if s.RateLimit != nil {
		defs = append(defs,
			Comment("RateLimitQPS is the sustained calls per second the provider allows."),
			Id("RateLimitQPS").Op("=").Lit(s.RateLimit.QPS),
			Comment("RateLimitBurst is the calls allowed at once."),
			Id("RateLimitBurst").Op("=").Lit(s.RateLimit.Burst))
	}
	if s.Compensation != nil {
		defs = append(defs,
			Comment("Compensation is the connector that undoes this one's effect."),
			Id("Compensation").Op("=").Lit(s.Compensation.Connector))
	}
	e.f.Const().Defs(defs...)
	e.f.Line()

	e.stringList("Egress", "Egress returns where the connector may connect: hosts (exact, or *.suffix for the hosts below it) and IP addresses, each optionally with :PORT.", s.Egress)
	e.stringList("Scopes", "Scopes returns the OAuth-style scopes the connector requests.", s.Scopes)
	e.stringList("Capabilities", "Capabilities returns the capabilities the connector declares.", capNames(s))
	e.emitRetryPolicy()
	e.emitInfo()
	e.f.Comment("Manifest returns the connector's spec as canonical JSON, with the schemas")
	e.f.Comment("it refers to bundled under $defs, exactly as " + specBase(s) + " declared it.")
	e.f.Func().Id("Manifest").Params().Index().Byte().Block(Return(Index().Byte().Call(Id("manifest"))))
	e.f.Line()
	e.f.Const().Id("manifest").Op("=").Add(stringLiteral(manifest))
	e.f.Line()
	e.emitSecrets()
	e.emitContext()
	e.emitNewNode()
}

func specBase(s *connectorspec.Spec) string {
	_, base := splitPath(s.File)
	return base
}

func splitPath(p string) (dir, base string) {
	i := strings.LastIndexAny(p, `/\`)
	return p[:i+1], p[i+1:]
}

func retryOwnerConst(s *connectorspec.Spec) string {
	if s.Retry == nil {
		return "RetryNone"
	}
	return retryOwnerName(s.Retry.Owner)
}

// retryOwnerName is the runtime constant of a retry owner.
func retryOwnerName(o flowtype.RetryOwner) string {
	switch o {
	case flowtype.RetryConnector:
		return "RetryConnector"
	case flowtype.RetryOrchestrator:
		return "RetryOrchestrator"
	}
	return "RetryNone"
}

// durationCode renders d as the readable constant expression a person
// would write: 24 * time.Hour, 500 * time.Millisecond.
func durationCode(d time.Duration) Code {
	units := []struct {
		d    time.Duration
		name string
	}{{time.Hour, "Hour"}, {time.Minute, "Minute"}, {time.Second, "Second"}, {time.Millisecond, "Millisecond"}, {time.Microsecond, "Microsecond"}}
	if d == 0 {
		return Lit(0)
	}
	for _, u := range units {
		if d%u.d == 0 {
			if d == u.d {
				return Qual("time", u.name)
			}
			return Lit(int(d/u.d)).Op("*").Qual("time", u.name)
		}
	}
	return Qual("time", "Duration").Call(Lit(int64(d)))
}

func (e *nodeEmitter) stringList(name, doc string, values []string) {
	e.f.Comment(doc)
	var lits []Code
	for _, v := range values {
		lits = append(lits, Lit(v))
	}
	ret := Return(Nil())
	if len(lits) > 0 {
		ret = Return(Index().String().Values(lits...))
	}
	e.f.Func().Id(name).Params().Index().String().Block(ret)
	e.f.Line()
}

func capNames(s *connectorspec.Spec) []string {
	var out []string
	for _, c := range s.Capabilities {
		out = append(out, string(c.Name))
	}
	slices.Sort(out)
	return slices.Compact(out)
}

func (e *nodeEmitter) emitRetryPolicy() {
	s := e.spec
	d := Dict{}
	if s.Retry != nil && s.Retry.Policy != nil {
		p := s.Retry.Policy
		d[Id("InitialInterval")] = durationCode(time.Duration(p.InitialInterval))
		if p.BackoffCoefficient != 0 {
			d[Id("BackoffCoefficient")] = Lit(p.BackoffCoefficient)
		}
		if p.MaxInterval != 0 {
			d[Id("MaxInterval")] = durationCode(time.Duration(p.MaxInterval))
		}
		d[Id("MaxAttempts")] = Lit(p.MaxAttempts)
		if len(p.NonRetryable) > 0 {
			var kinds []Code
			for _, k := range p.NonRetryable {
				kinds = append(kinds, Qual(runtimePkg, k.String()))
			}
			d[Id("NonRetryable")] = Index().Qual(runtimePkg, "ErrorKind").Values(kinds...)
		}
	}
	e.f.Comment("RetryPolicy is the backoff policy the spec declares (one attempt when none).")
	e.f.Comment("The engine applies it only when RetryOwner is RetryOrchestrator; a connector")
	e.f.Comment("that owns its retries applies it itself, and is never retried from outside.")
	e.f.Func().Id("RetryPolicy").Params().Qual(runtimePkg, "RetryPolicy").Block(
		Return(Qual(runtimePkg, "RetryPolicy").Values(d)))
	e.f.Line()
}

func (e *nodeEmitter) emitInfo() {
	d := Dict{
		Id("ID"):           Id("ID"),
		Id("Version"):      Id("Version"),
		Id("Effects"):      Id("Effects"),
		Id("Determinism"):  Id("Determinism"),
		Id("RetryOwner"):   Id("RetryOwner"),
		Id("Retry"):        Id("RetryPolicy").Call(),
		Id("KeySchema"):    Id("KeySchema"),
		Id("Capabilities"): Id("Capabilities").Call(),
		Id("Egress"):       Id("Egress").Call(),
		Id("Redact"):       Id("redact"),
		Id("DataClass"):    Id("dataClass"),
	}
	if c := e.spec.Cache; c != nil && len(c.Key)+len(c.Pin) > 0 {
		var fields []Code
		keys := slices.Clone(c.Key)
		for _, f := range c.Pin { // a pin is part of the key
			if !slices.Contains(keys, f) {
				keys = append(keys, f)
			}
		}
		for _, f := range keys {
			fields = append(fields, Lit(f))
		}
		cache := Dict{Id("Key"): Index().String().Values(fields...)}
		if c.TTL > 0 {
			cache[Id("TTL")] = durationCode(time.Duration(c.TTL))
		}
		d[Id("Cache")] = Qual(runtimePkg, "Cache").Values(cache)
	}
	if e.spec.RateLimit != nil {
		d[Id("RateLimit")] = Qual(runtimePkg, "RateLimit").Values(Dict{Id("QPS"): Id("RateLimitQPS"), Id("Burst"): Id("RateLimitBurst")})
	}
	if handles := secretHandles(e.spec); len(handles) > 0 {
		d[Id("Secrets")] = stringSlice(handles)
		d[Id("SecretHosts")] = secretHostsCode(secretHosts(e.spec))
	}
	if e.spec.Idempotency != nil {
		d[Id("KeyScope")] = Id("IdempotencyScope")
	}
	if keys := e.keyFields(); len(keys) > 0 {
		var lits []Code
		for _, k := range keys {
			lits = append(lits, Lit(k))
		}
		d[Id("KeyFields")] = Index().String().Values(lits...)
	}
	e.f.Comment("redact removes the values whose data class is not public from the")
	e.f.Comment("decoding and validation errors of part, so they stay out of job state and logs.")
	e.f.Func().Id("redact").Params(Id("part").String(), Err().Error()).Error().Block(
		Switch(Id("part")).Block(
			Case(Lit("params")).Block(Return(Qual(runtimePkg, "Redact").Call(Err(), Lit("params"), Id("DataClass")))),
			Case(Lit("input")).Block(Return(Qual(runtimePkg, "Redact").Call(Err(), Lit(e.inPort), Id("DataClass")))),
			Case(Lit("output")).Block(Return(Qual(runtimePkg, "Redact").Call(Err(), Lit(e.outPort), Id("DataClass")))),
		),
		Return(Err()),
	)
	e.f.Line()
	e.f.Comment("dataClass returns the x-data-class declared at path of part (\"params\", \"input\"")
	e.f.Comment("or \"output\"), or at its nearest declared ancestor; \"\" when none is.")
	e.f.Func().Id("dataClass").Params(Id("part"), Id("path").String()).String().Block(
		Switch(Id("part")).Block(
			Case(Lit("params")).Block(Return(Qual(runtimePkg, "ClassAt").Call(Id("DataClass"), Lit("params"), Id("path")))),
			Case(Lit("input")).Block(Return(Qual(runtimePkg, "ClassAt").Call(Id("DataClass"), Lit(e.inPort), Id("path")))),
			Case(Lit("output")).Block(Return(Qual(runtimePkg, "ClassAt").Call(Id("DataClass"), Lit(e.outPort), Id("path")))),
		),
		Return(Lit("")),
	)
	e.f.Line()
	e.f.Comment("Info is what the runtime needs to know about the connector.")
	e.f.Func().Id("Info").Params().Qual(runtimePkg, "NodeInfo").Block(Return(Qual(runtimePkg, "NodeInfo").Values(d)))
	e.f.Line()
}

func (e *nodeEmitter) keyFields() []string {
	if e.spec.Idempotency == nil {
		return nil
	}
	return e.spec.Idempotency.Key
}

// checkKeyField records in e.problems why a dotted key field cannot feed
// the idempotency key: a segment that names no property of an object, or
// a value that is not a string, number, boolean or enum.
func (e *nodeEmitter) checkKeyField(key string) {
	t := e.in
	for _, seg := range strings.Split(key, ".") {
		sd, pkg := e.structNamed(t.name, t.pkg)
		if t.kind != kindStruct || sd == nil {
			e.problems = append(e.problems, fmt.Sprintf("idempotency key field %q: %s is not an object", key, t.name))
			return
		}
		var fd *fieldDef
		for i := range sd.fields {
			if sd.fields[i].jsonName == seg {
				fd = &sd.fields[i]
			}
		}
		if fd == nil {
			e.problems = append(e.problems, fmt.Sprintf("idempotency key field %q: the input has no property %q", key, seg))
			return
		}
		t = fd.typ
		if t.pkg == "" {
			t.pkg = pkg // a field of a shared type is in the shared package
		}
	}
	switch t.kind {
	case kindString, kindInt, kindFloat, kindBool, kindEnum:
		return
	}
	e.problems = append(e.problems, fmt.Sprintf("idempotency key field %q must be a string, number or boolean", key))
}

func (e *nodeEmitter) structNamed(name, pkg string) (*structDef, string) {
	m := e.m
	for _, a := range e.m.aliases {
		if a.name == name && pkg == "" {
			name, pkg = a.target, a.targetPkg
		}
	}
	if pkg != "" && m.shared != nil {
		for _, sp := range m.shared.pkgs {
			if sp.importPath == pkg {
				m = sp.m
			}
		}
	}
	for _, sd := range m.structs {
		if sd.name == name {
			return sd, pkg
		}
	}
	return nil, pkg
}

// emitSecrets writes the SecretHandle type with one constant per handle.
func (e *nodeEmitter) emitSecrets() {
	if !slices.Contains(capNames(e.spec), string(flowtype.Secrets)) {
		return
	}
	e.f.Comment("SecretHandle names a secret the connector declares; Context.Secret resolves it.")
	e.f.Type().Id("SecretHandle").String()
	e.f.Line()
	var defs []Code
	for _, sec := range e.spec.Secrets {
		defs = append(defs, Id("Secret"+goName(sec.Handle)).Id("SecretHandle").Op("=").Lit(sec.Handle))
	}
	if len(defs) > 0 {
		e.f.Comment("The secret handles declared in " + specBase(e.spec) + ".")
		e.f.Const().Defs(defs...)
		e.f.Line()
	}
}

// stringLiteral renders s as a raw string literal when it can be one, so a
// multi-line manifest reads as JSON in the generated file.
func stringLiteral(s []byte) Code {
	if !bytes.ContainsAny(s, "`\r") && utf8.Valid(s) {
		return Op("`" + string(s) + "`")
	}
	return Lit(string(s))
}
