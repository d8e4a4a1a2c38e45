//lint:file-ignore ST1001 jennifer is a code-building DSL meant to be dot-imported.

package gen

import (
	"fmt"
	"slices"
	"strings"

	. "github.com/dave/jennifer/jen"

	"github.com/flowgen-dev/flowgen/flowtype"
)

// capMethod is one method a generated Context gains from one capability.
type capMethod struct {
	caps    []flowtype.Capability // any of these grants the method
	field   string                // runtime.Capabilities field
	name    string
	doc     string
	params  []Code
	results []Code
	call    func(h *Statement) *Statement // the call on the capability h
	zero    []Code                        // results before the error when not granted
	// infallible methods return no error: the runtime grants clocks and
	// random numbers whenever they are declared.
	infallible bool
}

// capMethods lists every capability method, in the order they appear in a
// generated Context.
var capMethods = []capMethod{
	{
		caps: []flowtype.Capability{flowtype.HTTPRead}, field: "HTTPRead", name: "Get",
		doc:     "Get performs a GET request to a host in the egress allowlist.",
		params:  []Code{Id("url").String(), Id("header").Qual("net/http", "Header")},
		results: []Code{Op("*").Qual(runtimePkg, "HTTPResponse"), Error()},
		call: func(h *Statement) *Statement {
			return h.Dot("Get").Call(Id("c"), Id("url"), Id("header"))
		},
		zero: []Code{Nil()},
	},
	{
		caps: []flowtype.Capability{flowtype.HTTPReadPinned}, field: "HTTPPinned", name: "GetPinned",
		doc:     "GetPinned reads a resource pinned by its ETag or content hash; a response that does not match pin fails, so a replay reads the same bytes or nothing.",
		params:  []Code{List(Id("url"), Id("pin")).String(), Id("header").Qual("net/http", "Header")},
		results: []Code{Op("*").Qual(runtimePkg, "HTTPResponse"), Error()},
		call: func(h *Statement) *Statement {
			return h.Dot("GetPinned").Call(Id("c"), Id("url"), Id("pin"), Id("header"))
		},
		zero: []Code{Nil()},
	},
	{
		caps: []flowtype.Capability{flowtype.HTTPWrite}, field: "HTTPWrite", name: "Do",
		doc:     "Do performs a request with effects to a host in the egress allowlist. Pass IdempotencyKey to the provider (an Idempotency-Key header) so a retried call is recognised.",
		params:  []Code{List(Id("method"), Id("url")).String(), Id("header").Qual("net/http", "Header"), Id("body").Index().Byte()},
		results: []Code{Op("*").Qual(runtimePkg, "HTTPResponse"), Error()},
		call: func(h *Statement) *Statement {
			return h.Dot("Do").Call(Id("c"), Id("method"), Id("url"), Id("header"), Id("body"))
		},
		zero: []Code{Nil()},
	},
	{
		caps: []flowtype.Capability{flowtype.KVRead}, field: "KVRead", name: "KVGet",
		doc:     "KVGet reads key from the connector's namespace of the job store; ok is false when it is absent.",
		params:  []Code{Id("key").String()},
		results: []Code{Id("value").Index().Byte(), Id("ok").Bool(), Id("err").Error()},
		call: func(h *Statement) *Statement {
			return h.Dot("Get").Call(Id("c"), Id("key"))
		},
		zero: []Code{Nil(), False()},
	},
	{
		caps: []flowtype.Capability{flowtype.KVWrite}, field: "KVWrite", name: "KVPut",
		doc:     "KVPut writes key in the connector's namespace of the job store.",
		params:  []Code{Id("key").String(), Id("value").Index().Byte()},
		results: []Code{Error()},
		call: func(h *Statement) *Statement {
			return h.Dot("Put").Call(Id("c"), Id("key"), Id("value"))
		},
	},
	{
		caps: []flowtype.Capability{flowtype.BlobRead, flowtype.BlobReadHash}, field: "BlobRead", name: "ReadBlob",
		doc:     "ReadBlob reads the blob called name.",
		params:  []Code{Id("name").String()},
		results: []Code{Index().Byte(), Error()},
		call: func(h *Statement) *Statement {
			return h.Dot("ReadBlob").Call(Id("c"), Id("name"))
		},
		zero: []Code{Nil()},
	},
	{
		caps: []flowtype.Capability{flowtype.BlobWrite}, field: "BlobWrite", name: "WriteBlob",
		doc:     "WriteBlob replaces the content of the blob called name, atomically.",
		params:  []Code{Id("name").String(), Id("data").Index().Byte()},
		results: []Code{Error()},
		call: func(h *Statement) *Statement {
			return h.Dot("WriteBlob").Call(Id("c"), Id("name"), Id("data"))
		},
	},
	{
		caps: []flowtype.Capability{flowtype.DBRead, flowtype.DBWrite}, field: "DBRead", name: "Query",
		doc:     "Query runs a query on the database the connector is bound to.",
		params:  []Code{Id("query").String(), Id("args").Op("...").Any()},
		results: []Code{Op("*").Qual("database/sql", "Rows"), Error()},
		call: func(h *Statement) *Statement {
			return h.Dot("QueryContext").Call(Id("c"), Id("query"), Id("args").Op("..."))
		},
		zero: []Code{Nil()},
	},
	{
		caps: []flowtype.Capability{flowtype.DBWrite}, field: "DBWrite", name: "Exec",
		doc:     "Exec runs a statement that changes the database the connector is bound to.",
		params:  []Code{Id("query").String(), Id("args").Op("...").Any()},
		results: []Code{Qual("database/sql", "Result"), Error()},
		call: func(h *Statement) *Statement {
			return h.Dot("ExecContext").Call(Id("c"), Id("query"), Id("args").Op("..."))
		},
		zero: []Code{Nil()},
	},
	{
		caps: []flowtype.Capability{flowtype.Dedupe}, field: "Dedupe", name: "PutIfAbsent",
		doc:     "PutIfAbsent records key for ttl and reports whether it was absent (true: first time, go ahead).",
		params:  []Code{Id("key").String(), Id("ttl").Qual("time", "Duration")},
		results: []Code{Bool(), Error()},
		call: func(h *Statement) *Statement {
			return h.Dot("PutIfAbsent").Call(Id("c"), Id("key"), Id("ttl"))
		},
		zero: []Code{False()},
	},
	{
		caps: []flowtype.Capability{flowtype.Clock}, field: "Clock", name: "Now",
		doc:     "Now tells the time. Output that depends on it is BestEffort at best.",
		results: []Code{Qual("time", "Time")}, infallible: true,
		call: func(h *Statement) *Statement { return h.Dot("Now").Call() },
	},
	{
		caps: []flowtype.Capability{flowtype.RNG, flowtype.RNGSeeded}, field: "RNG", name: "Uint64",
		doc:     "Uint64 draws a random number (from the activation's seed when the connector declares rng.seeded).",
		results: []Code{Uint64()}, infallible: true,
		call: func(h *Statement) *Statement { return h.Dot("Uint64").Call() },
	},
	{
		caps: []flowtype.Capability{flowtype.Secrets}, field: "Secrets", name: "Secret",
		doc:     "Secret resolves a declared secret handle to its value at call time. Never log, return or store the value.",
		params:  []Code{Id("handle").Id("SecretHandle")},
		results: []Code{String(), Error()},
		call: func(h *Statement) *Statement {
			return h.Dot("Secret").Call(Id("c"), String().Call(Id("handle")))
		},
		zero: []Code{Lit("")},
	},
}

func (m capMethod) label() string {
	names := make([]string, len(m.caps))
	for i, c := range m.caps {
		names[i] = string(c)
	}
	return strings.Join(names, " or ")
}

// emitContext writes the Context type, which has exactly the methods of
// the capabilities the spec declares.
func (e *nodeEmitter) emitContext() {
	declared := capNames(e.spec)
	var have, missing []capMethod
	for _, m := range capMethods {
		granted := slices.ContainsFunc(m.caps, func(c flowtype.Capability) bool { return slices.Contains(declared, string(c)) })
		if granted {
			have = append(have, m)
		} else {
			missing = append(missing, m)
		}
	}
	var haveList, missingList []string
	for _, m := range have {
		haveList = append(haveList, fmt.Sprintf("%s (%s)", m.label(), m.name))
	}
	for _, m := range missing {
		missingList = append(missingList, fmt.Sprintf("%s (%s)", m.label(), m.name))
	}
	first := "Context is what Run receives: cancellation (it is a context.Context), the activation's idempotency key and attempt, a heartbeat, and only the capabilities " + specBase(e.spec) + " declares"
	if len(have) == 0 {
		first += fmt.Sprintf(", which are none: a %s connector gets no I/O.", e.spec.Effects)
	} else {
		first += ": " + strings.Join(haveList, ", ") + "."
	}
	rest := `The other capabilities are absent on purpose, so using one does not compile ("ctx.Now undefined"): ` +
		strings.Join(missingList, ", ") + ". " +
		fmt.Sprintf("To use one, declare it under capabilities: in %s and run go generate; flowgen validate checks that effects %s and determinism %s allow it.",
			specBase(e.spec), e.spec.Effects, e.spec.Determinism)
	e.f.Add(docComment(strings.Join(wrap(rest), "\n"), first))
	e.f.Type().Id("Context").Struct(
		Qual("context", "Context"),
		Id("rt").Op("*").Qual(runtimePkg, "Context"),
	)
	e.f.Line()
	e.f.Comment("IdempotencyKey is the activation's canonical key; pass it to external APIs so")
	e.f.Comment("a retried call is recognised. Empty when the spec declares no key.")
	e.f.Func().Params(Id("c").Id("Context")).Id("IdempotencyKey").Params().String().Block(Return(Id("c").Dot("rt").Dot("IdempotencyKey").Call()))
	e.f.Line()
	e.f.Comment("IdempotencyUUID is the key in UUID form (RFC 9562, version 8), for providers")
	e.f.Comment("that want their idempotency keys as UUIDs. Empty when the spec declares no key.")
	e.f.Func().Params(Id("c").Id("Context")).Id("IdempotencyUUID").Params().String().Block(Return(Id("c").Dot("rt").Dot("IdempotencyUUID").Call()))
	e.f.Line()
	e.f.Comment("Attempt is 1 on the first try of the activation and counts retries.")
	e.f.Func().Params(Id("c").Id("Context")).Id("Attempt").Params().Int().Block(Return(Id("c").Dot("rt").Dot("Attempt").Call()))
	e.f.Line()
	e.f.Comment("Heartbeat tells the engine the activation is alive; under a heartbeat")
	e.f.Comment("timeout, call it at least that often during long work.")
	e.f.Func().Params(Id("c").Id("Context")).Id("Heartbeat").Params().Block(Id("c").Dot("rt").Dot("Heartbeat").Call())
	e.f.Line()
	for _, m := range have {
		e.emitCapMethod(m)
	}
}

func (e *nodeEmitter) emitCapMethod(m capMethod) {
	e.f.Add(docComment("", m.doc+" (capability "+m.label()+")"))
	h := Id("h")
	var body []Code
	body = append(body, Id("h").Op(":=").Id("c").Dot("rt").Dot("Caps").Call().Dot(m.field))
	if !m.infallible {
		notGranted := append(append([]Code{}, m.zero...), Qual(runtimePkg, "NotGranted").Call(Lit(m.label())))
		body = append(body, If(Id("h").Op("==").Nil()).Block(Return(notGranted...)))
	}
	body = append(body, Return(m.call(h)))
	e.f.Func().Params(Id("c").Id("Context")).Id(m.name).Params(m.params...).Params(m.results...).Block(body...)
	e.f.Line()
}

// emitNewNode writes Implementation and NewNode, and the compile-time check
// that the hand-written Connector type implements it.
func (e *nodeEmitter) emitNewNode() {
	e.f.Comment("Implementation is what the hand-written Connector type provides: Run, called")
	e.f.Comment("once per activation with decoded, validated params and input. Return a")
	e.f.Comment("*runtime.Error (runtime.Errorf) to choose the error kind that drives retries.")
	e.f.Type().Id("Implementation").Interface(
		Id("Run").Params(Id("ctx").Id("Context"), Id("params").Id("Params"), Id("in").Id(e.in.name)).Params(Id(e.out.name), Error()),
	)
	e.f.Line()
	e.f.Comment("Connector is declared in a hand-written file of this package (flowgen init")
	e.f.Comment("scaffolds it). \"undefined: Connector\" means that file is missing; \"does not")
	e.f.Comment("implement Implementation\" shows the Run signature the spec now requires.")
	e.f.Var().Id("_").Id("Implementation").Op("=").Parens(Op("*").Id("Connector")).Parens(Nil())
	e.f.Line()
	e.f.Comment("NewNode returns the runtime node that runs impl under this connector's")
	e.f.Comment("metadata: params and input are decoded and validated before Run, and the")
	e.f.Comment("output is validated after it; a violation fails with SchemaMismatch.")
	e.f.Func().Id("NewNode").Params(Id("impl").Id("Implementation")).Qual(runtimePkg, "Runner").Block(
		Return(Qual(runtimePkg, "Typed").Call(Id("Info").Call(),
			Func().Params(Id("ctx").Op("*").Qual(runtimePkg, "Context"), Id("params").Id("Params"), Id("in").Id(e.in.name)).Params(Id(e.out.name), Error()).Block(
				Return(Id("impl").Dot("Run").Call(Id("Context").Values(Id("ctx").Dot("Context"), Id("ctx")), Id("params"), Id("in"))),
			))),
	)
	e.f.Line()
	e.f.Comment("NewTypedNode is NewNode with the node's input and output types attached, for")
	e.f.Comment("flows whose connections the compiler checks (runtime.AddNode, runtime.Connect).")
	e.f.Func().Id("NewTypedNode").Params(Id("impl").Id("Implementation")).Qual(runtimePkg, "TypedNode").Types(Id(e.in.name), Id(e.out.name)).Block(
		Return(Qual(runtimePkg, "TypedNode").Types(Id(e.in.name), Id(e.out.name)).Values(Dict{Id("Runner"): Id("NewNode").Call(Id("impl"))})),
	)
}
