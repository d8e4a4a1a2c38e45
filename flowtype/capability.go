package flowtype

// Capability names one kind of access a node may be given by the runtime. The
// runtime provides each capability at a version; a spec states the semver range
// it needs.
type Capability string

// The capability catalogue.
const (
	HTTPRead       Capability = "http.read"
	HTTPReadPinned Capability = "http.read.pinned"
	HTTPWrite      Capability = "http.write"
	KVRead         Capability = "kv.read"
	KVWrite        Capability = "kv.write"
	BlobRead       Capability = "blob.read"
	BlobReadHash   Capability = "blob.read.hash"
	BlobWrite      Capability = "blob.write"
	DBRead         Capability = "db.read"
	DBWrite        Capability = "db.write"
	Dedupe         Capability = "dedupe"
	Clock          Capability = "clock"
	RNG            Capability = "rng"
	RNGSeeded      Capability = "rng.seeded"
	Secrets        Capability = "secrets"
)

// CapabilityInfo is what holding a capability implies: the weakest effects and
// strongest determinism a node that holds it may declare, and the version of
// the capability the runtime provides.
type CapabilityInfo struct {
	Name Capability
	// Effects is the minimum effects class of a node holding the capability.
	Effects Effects
	// Determinism is the strongest determinism a node holding it may claim.
	Determinism Determinism
	// Version is the semantic version the runtime provides.
	Version string
	// Network reports whether the capability reaches other hosts, which makes
	// an egress allowlist mandatory.
	Network bool
}

// Capabilities is the catalogue, sorted by name.
var Capabilities = []CapabilityInfo{
	{BlobRead, ReadOnly, BestEffort, "1.0.0", true},
	{BlobReadHash, ReadOnly, Strict, "1.0.0", true},
	{BlobWrite, Effectful, BestEffort, "1.0.0", true},
	{Clock, Pure, BestEffort, "1.0.0", false},
	{DBRead, ReadOnly, BestEffort, "1.0.0", true},
	{DBWrite, Effectful, BestEffort, "1.0.0", true},
	{Dedupe, Pure, Strict, "1.0.0", false},
	{HTTPRead, ReadOnly, BestEffort, "1.0.0", true},
	{HTTPReadPinned, ReadOnly, Stable, "1.0.0", true},
	{HTTPWrite, Effectful, BestEffort, "1.0.0", true},
	{KVRead, ReadOnly, BestEffort, "1.0.0", false},
	{KVWrite, Effectful, BestEffort, "1.0.0", false},
	{RNG, Pure, BestEffort, "1.0.0", false},
	{RNGSeeded, Pure, Strict, "1.0.0", false},
	{Secrets, Pure, Strict, "1.0.0", false},
}

// LookupCapability returns the catalogue entry for name.
func LookupCapability(name Capability) (CapabilityInfo, bool) {
	for _, c := range Capabilities {
		if c.Name == name {
			return c, true
		}
	}
	return CapabilityInfo{}, false
}

// CapabilityNames lists the catalogue's names in order.
func CapabilityNames() []string {
	out := make([]string, len(Capabilities))
	for i, c := range Capabilities {
		out[i] = string(c.Name)
	}
	return out
}

// EnumValues lists the catalogue's names, for schemas and help texts.
func (Capability) EnumValues() []string { return CapabilityNames() }
