package diag

// Code is a stable diagnostic identifier such as "DAG201". Codes are never
// reused for a different meaning; tools may match on them.
type Code string

// Info describes one code: its default severity and a short title.
type Info struct {
	Code     Code
	Severity Severity
	Title    string
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
	SECR201   Code = "SECR201"
	SAGA201   Code = "SAGA201"
	SAGA205   Code = "SAGA205"
	CAPV101   Code = "CAPV101"
	CTRL010   Code = "CTRL010"
	CTRL011   Code = "CTRL011"
	SUB001    Code = "SUB001"
	SUB002    Code = "SUB002"
)

// Codes is the table of every diagnostic code flowgen reports, in the order
// docs/diagnostics.md lists them.
var Codes = []Info{
	{FMT001, Error, "syntax error"},
	{FMT002, Error, "unknown field"},
	{FMT003, Error, "wrong type"},
	{FMT004, Error, "duplicate key"},
	{FMT005, Error, "missing required field"},
	{FMT006, Error, "invalid value"},
	{FMT007, Error, "unsupported apiVersion or kind"},
	{SCHEMA001, Error, "invalid JSON Schema"},
	{SCHEMA002, Error, "$ref file not found"},
	{FIX001, Error, "fixture does not match its port schema"},
	{DAG004, Error, "effectful node without idempotency key"},
	{DAG200, Error, "cycle"},
	{DAG201, Error, "port type mismatch"},
	{DAG202, Error, "unknown alias"},
	{DAG203, Error, "unknown port"},
	{DAG205, Error, "duplicate alias"},
	{DAG206, Error, "unresolved connector or subflow"},
	{EFFECT201, Error, "declared effects weaker than capabilities imply"},
	{EFFECT202, Error, "override weakens effects"},
	{DET302, Error, "declared determinism stronger than capabilities allow"},
	{DET303, Error, "override weakens determinism"},
	{IDEM020, Error, "effectful sink on at-least-once edge cannot deduplicate"},
	{IDEM021, Error, "idempotency key field not in input port"},
	{IDEM025, Error, "idempotency key field not Strict or Stable"},
	{EXACT001, Error, "exactly-once edge without dedupe store"},
	{EXACT005, Error, "exactly-once edge into non-idempotent sink"},
	{RETRY010, Error, "both sides retry"},
	{RETRY011, Error, "retry policy without a retry owner"},
	{CACHE001, Warning, "Strict connector without cache policy"},
	{CACHE002, Error, "Stable connector without pin"},
	{DATA101, Error, "missing x-data-class"},
	{DATA102, Error, "unknown data class"},
	{EGRESS101, Error, "empty egress intersection"},
	{EGRESS102, Error, "HTTP capability without egress allowlist"},
	{SECR201, Error, "secret scopes wider than requested"},
	{SAGA201, Error, "compensator port incompatible"},
	{SAGA205, Error, "compensation without undo key"},
	{CAPV101, Error, "unknown capability or unsatisfiable version range"},
	{CTRL010, Error, "switch edge with undeclared label"},
	{CTRL011, Error, "for_each items not an array"},
	{SUB001, Error, "subflow input not listed"},
	{SUB002, Error, "subflow nesting too deep or recursive"},
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
