package diag

// Code is a stable diagnostic identifier such as "DAG201". Codes are never
// reused for a different meaning; tools may match on them.
type Code string

// Info describes one code: its default severity, a short title, and the fix
// a diagnostic of this code carries when its reporter has no more specific
// one. docs/diagnostics.md repeats all three.
type Info struct {
	Code     Code
	Severity Severity
	Title    string
	Fix      string
}

// Format and schema codes: problems reading a file before any semantic check.
const (
	FMT001    Code = "FMT001"    // syntax error
	FMT002    Code = "FMT002"    // unknown field
	FMT003    Code = "FMT003"    // wrong type
	FMT004    Code = "FMT004"    // duplicate key
	FMT005    Code = "FMT005"    // missing required field
	FMT006    Code = "FMT006"    // invalid value
	FMT007    Code = "FMT007"    // unsupported apiVersion or kind
	SCHEMA001 Code = "SCHEMA001" // invalid JSON Schema
	SCHEMA002 Code = "SCHEMA002" // $ref file not found
	FIX001    Code = "FIX001"    // fixture does not match its port schema
	FIX002    Code = "FIX002"    // fixture error kind contradicts the provider's answer
)

// Connector and flow codes.
const (
	DAG004    Code = "DAG004"
	DAG200    Code = "DAG200"
	DAG201    Code = "DAG201"
	DAG202    Code = "DAG202"
	DAG203    Code = "DAG203"
	DAG205    Code = "DAG205"
	DAG206    Code = "DAG206"
	DAG207    Code = "DAG207"
	EFFECT201 Code = "EFFECT201"
	EFFECT202 Code = "EFFECT202"
	DET302    Code = "DET302"
	DET303    Code = "DET303"
	IDEM020   Code = "IDEM020"
	IDEM021   Code = "IDEM021"
	IDEM025   Code = "IDEM025"
	EXACT001  Code = "EXACT001"
	EXACT005  Code = "EXACT005"
	RETRY010  Code = "RETRY010"
	RETRY011  Code = "RETRY011"
	CACHE001  Code = "CACHE001"
	CACHE002  Code = "CACHE002"
	DATA101   Code = "DATA101"
	DATA102   Code = "DATA102"
	EGRESS101 Code = "EGRESS101"
	EGRESS102 Code = "EGRESS102"
	EGRESS103 Code = "EGRESS103"
	SECR201   Code = "SECR201"
	SECR202   Code = "SECR202"
	SAGA201   Code = "SAGA201"
	SAGA205   Code = "SAGA205"
	CAPV101   Code = "CAPV101"
	CTRL010   Code = "CTRL010"
	CTRL011   Code = "CTRL011"
	CTRL012   Code = "CTRL012"
	SUB001    Code = "SUB001"
	SUB002    Code = "SUB002"
	CONF001   Code = "CONF001"
	CONF002   Code = "CONF002"
)

// Code generation codes: valid specs the generator cannot express in Go.
const (
	GEN001 Code = "GEN001" // schema shape the generator does not support
	GEN002 Code = "GEN002" // port layout a node cannot have
)

// Codes is the table of every diagnostic code flowgen reports, in the order
// docs/diagnostics.md lists them.
var Codes = []Info{
	{FMT001, Error, "syntax error",
		"Fix the syntax at the position shown: an unclosed quote or bracket, a tab used for indentation, a stray `:`."},
	{FMT002, Error, "unknown field",
		"Remove the field or correct its spelling; the message lists the fields that are allowed where the format has few."},
	{FMT003, Error, "wrong type",
		"Quote strings that look like numbers (`version: \"1.0.0\"`) or write the value in the type the field takes."},
	{FMT004, Error, "duplicate key",
		"Keep one of the two definitions; bump the version when two files really are different releases."},
	{FMT005, Error, "missing required field",
		"Add the field; `flowgen schema connectorspec` or `flowgen schema flowir` shows every required field."},
	{FMT006, Error, "invalid value",
		"Use one of the values the message lists; close misspellings get a suggestion."},
	{FMT007, Error, "unsupported apiVersion or kind",
		"Start the file with `apiVersion: flowgen.dev/v1` and the right `kind`."},
	{SCHEMA001, Error, "invalid JSON Schema",
		"Correct the keyword; flowgen's own annotations (`x-data-class`, `x-determinism`) are validated too."},
	{SCHEMA002, Error, "$ref file not found",
		"Correct the path (relative to the file holding the `$ref`) or copy the remote schema next to the spec."},
	{FIX001, Error, "fixture does not match its port schema",
		"Make the fixture match the port schema, or fix the schema if the fixture shows real data."},
	{FIX002, Error, "fixture error kind contradicts the provider's answer",
		"Expect the kind the taxonomy gives the last error answer recorded (401 Auth, 403 Auth or PolicyDenied, 429 RateLimited, 408/5xx/timeout Transient, other 4xx Permanent or SchemaMismatch; RateLimited too when the answer carries `Retry-After`), and map it so in the connector."},
	{DAG004, Error, "effectful node without idempotency key",
		"Add `idempotency: {key: [<input fields that identify the effect>]}`."},
	{DAG200, Error, "cycle",
		"Remove one edge of the named cycle, or mark the edge that repeats work as a bounded loop (`cycle: {maxIterations: N}`) leaving a switch."},
	{DAG201, Error, "port type mismatch",
		"Insert a transform node between the two, or change one of the schemas; the hint names the field and both types."},
	{DAG202, Error, "unknown alias",
		"Correct the alias; the hint lists the closest existing alias."},
	{DAG203, Error, "unknown port",
		"Use one of the ports the hint lists."},
	{DAG205, Error, "duplicate alias",
		"Rename one of them; aliases name nodes in edges and in job state."},
	{DAG206, Error, "unresolved connector or subflow",
		"Add the directory holding the spec to `connectors:`, fix the id or widen the version range, or correct the path."},
	{DAG207, Error, "invalid cycle edge",
		"Point the cycle edge from a switch or checkpoint port back to a node that leads to it, with `maxIterations` between 1 and 1000000."},
	{EFFECT201, Error, "declared effects weaker than capabilities imply",
		"Declare the effects the capabilities require, or drop the capability."},
	{EFFECT202, Error, "override weakens effects",
		"Remove the override, or use a connector that really has the weaker effects."},
	{DET302, Error, "declared determinism stronger than capabilities allow",
		"Declare the weaker class, or use the pinned or seeded form of the capability (`http.read.pinned`, `rng.seeded`)."},
	{DET303, Error, "override weakens determinism",
		"Remove the override."},
	{IDEM020, Error, "effectful sink on at-least-once edge cannot deduplicate",
		"Set `partitionKey` on the edge, or change the connector's key scope."},
	{IDEM021, Error, "idempotency key field not in input port",
		"Use fields of the port; the hint lists them."},
	{IDEM025, Error, "idempotency key field not Strict or Stable",
		"Key on a field that is stable across replays, or mark the producer's output property `x-determinism: Strict` when it echoes an input."},
	{EXACT001, Error, "exactly-once edge without dedupe store",
		"Bind one with `policies: {dedupeStore: default}`, or relax the edge to `AtLeastOnce` with an idempotent sink."},
	{EXACT005, Error, "exactly-once edge into non-idempotent sink",
		"Give the connector an idempotency key, or use `AtLeastOnce`."},
	{RETRY010, Error, "both sides retry",
		"Keep one owner: remove the node's retry, or make the connector `owner: orchestrator`."},
	{RETRY011, Error, "retry policy without a retry owner",
		"Set `owner` to `connector` or `orchestrator`, or set `maxAttempts: 1`."},
	{CACHE001, Warning, "Strict connector without cache policy",
		"Add `cache: {key: [...]}`, or ignore the warning when computing is cheaper than looking up."},
	{CACHE002, Error, "Stable connector without pin",
		"Add `cache: {pin: [<input fields that select the snapshot>]}`."},
	{DATA101, Error, "missing x-data-class",
		"Add `x-data-class: public` (or the class that applies) to the property."},
	{DATA102, Error, "unknown data class",
		"Use a class from the catalogue; the hint lists them."},
	{EGRESS101, Error, "empty egress intersection",
		"Widen `policies.egress`, or use a connector whose egress falls within it."},
	{EGRESS102, Error, "HTTP capability without egress allowlist",
		"List the hosts it calls in `egress`."},
	{EGRESS103, Error, "egress to a special-purpose address or a public suffix",
		"Name the provider's own public host; reach a local stand-in through FLOWGEN_CONNECT_TO instead."},
	{SECR201, Error, "secret scopes wider than requested",
		"Request the scope in `scopes`, or narrow the secret's scopes."},
	{SECR202, Error, "secret without hosts it may be sent to",
		"List under the secret's `hosts` the egress entries it is sent to."},
	{SAGA201, Error, "compensator port incompatible",
		"Make the compensator's input accept the output, or compensate with another connector."},
	{SAGA205, Error, "compensation without undo key",
		"Add `compensation.undoKey` with fields of the output port that identify the effect."},
	{CAPV101, Error, "unknown capability or unsatisfiable version range",
		"Use a capability from the catalogue (the hint lists them) with a range the runtime's version satisfies."},
	{CTRL010, Error, "switch edge with undeclared label",
		"Declare the case, use `default`, or correct the label."},
	{CTRL011, Error, "for_each items not an array",
		"Point `items` at an array field of the upstream output."},
	{CTRL012, Error, "ordering declared but not enforced",
		"Remove `ordering: Ordered`, or set `ordering: Unordered`, and do not rely on the order deliveries arrive in."},
	{SUB001, Error, "subflow input not listed",
		"Add the port to the subflow's `inputs` if it may see this data."},
	{SUB002, Error, "subflow nesting too deep or recursive",
		"Break the recursion, or flatten the nesting."},
	{CONF001, Error, "confined run without a certified module",
		"Pull the connector from a registry (`flowgen pull`) and list its directory under `connectors:`, or remove `run: confined`."},
	{CONF002, Error, "pulled connector run natively against its pull policy",
		"Remove `run: native`, or pull the connector under a policy with `requireConfined: false`."},
	{GEN001, Error, "schema shape the generator does not support",
		"Simplify the schema to what `flowgen gen` supports (docs/codegen.md), or carry the value as a JSON string."},
	{GEN002, Error, "port layout a node cannot have",
		"Give the connector one output port, and call its input port `in` when it has several."},
}

// Lookup returns the table entry for c and whether it exists.
func Lookup(c Code) (Info, bool) {
	for _, in := range Codes {
		if in.Code == c {
			return in, true
		}
	}
	return Info{}, false
}

// Severity returns the code's default severity; unknown codes are errors.
func (c Code) Severity() Severity {
	in, _ := Lookup(c)
	return in.Severity
}
