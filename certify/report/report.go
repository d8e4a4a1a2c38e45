// Package report is what certification leaves behind and what its
// readers need: the report and its checks, the names of the checks, the
// files of a certification directory, and Verify, which checks such a
// directory against a public key. It is a leaf: pulling and policy
// evaluation read reports without linking the certifier.
package report

import (
	"time"

	"github.com/flowgen-dev/flowgen/internal/strictyaml"
)

// Outcome is a check's verdict.
type Outcome string

// The outcomes. Skip means the check did not run: a gate before it
// failed.
const (
	Pass Outcome = "pass"
	Warn Outcome = "warn"
	Fail Outcome = "fail"
	Skip Outcome = "skip"
)

// Check is one named check's result.
type Check struct {
	Name       CheckName `json:"name"`
	Outcome    Outcome   `json:"outcome"`
	Summary    string    `json:"summary"`
	Evidence   []string  `json:"evidence,omitempty"`
	DurationMS int64     `json:"duration_ms"`
}

// Report is a certification run.
type Report struct {
	Connector string `json:"connector"`
	Version   string `json:"version"`
	// ManifestDigest is the sha256 of the connector's manifest (the spec
	// with its schemas bundled).
	ManifestDigest string `json:"manifest_digest"`
	// Module, ModuleVersion and ArtifactDigest identify the artifact that
	// was certified (package artifact); empty when it could not be built.
	Module         string `json:"module,omitempty"`
	ModuleVersion  string `json:"module_version,omitempty"`
	ArtifactDigest string `json:"artifact_digest,omitempty"`
	// ModuleDigest names the module every check ran: the connector
	// compiled to WebAssembly (package wasmbuild), the bytes production
	// runs confined.
	ModuleDigest string `json:"module_digest,omitempty"`
	// ReplayHash summarizes the determinism replay: the sha256 over every
	// fixture's replay hash, the same in every run (Strict and Stable
	// connectors only).
	ReplayHash string `json:"replay_hash,omitempty"`
	// Sandbox says how connector code ran; Insecure is true when it ran
	// outside any sandbox (flowgen certify --insecure-no-sandbox), which no
	// registry accepts.
	Sandbox  string `json:"sandbox,omitempty"`
	Insecure bool   `json:"insecure,omitempty"`
	// Waivers lists every //flowgen:allow comment in the connector's code,
	// whether it accepted a finding, and why it was refused if it was.
	Waivers []Waiver `json:"waivers,omitempty"`
	// World is what the run drew: the seed that repeats it and the
	// logical time its behaviour checks ran at.
	World    *World            `json:"world,omitempty"`
	Checks   []Check           `json:"checks"`
	Tools    map[string]string `json:"tools"`
	Started  time.Time         `json:"started"`
	Finished time.Time         `json:"finished"`
}

// Waiver is one //flowgen:allow comment, as evidence.
type Waiver struct {
	File string `json:"file"`
	Line int    `json:"line"`
	Rule string `json:"rule"`
	// Package is the dependency whose findings a RULE@PACKAGE waiver
	// accepts.
	Package string `json:"package,omitempty"`
	Reason  string `json:"reason,omitempty"`
	// Used is true when it accepted a finding.
	Used bool `json:"used"`
	// Refused says why it accepted nothing (a rule that can never be
	// waived, no reason given, an unknown rule).
	Refused string `json:"refused,omitempty"`
}

// Check returns the named check, or nil when it is not in the report.
func (r *Report) Check(name CheckName) *Check {
	for i := range r.Checks {
		if r.Checks[i].Name == name {
			return &r.Checks[i]
		}
	}
	return nil
}

// CheckName names a check ("fixtures", "duplicate-delivery", ...).
type CheckName string

func (n CheckName) String() string { return string(n) }

// Passed reports whether no check failed.
func (r *Report) Passed() bool {
	for _, c := range r.Checks {
		if c.Outcome == Fail {
			return false
		}
	}
	return true
}

// checkNames are the checks a run performs, in order (package certify's
// table runs exactly these; its tests hold the two equal).
var checkNames = []CheckName{
	"spec", "generated", "artifact", "static-analysis", "build",
	"fixtures", "duplicate-delivery", "determinism", "data-classes",
	"egress", "confinement", "contract-coverage", "sbom", "signature",
}

// CheckNames lists the checks a run performs, in order.
func CheckNames() []CheckName { return append([]CheckName(nil), checkNames...) }

// The files a run with Out writes (each with FILE.sig when signed).
const (
	ArtifactFile         = "artifact.zip"
	ArtifactManifestFile = "artifact.json"
	SBOMFile             = "sbom.spdx.json"
	ReportFile           = "report.json"
	// ModuleFile is the connector's module: what every check ran, and
	// what production runs confined (the report names its digest).
	ModuleFile = "module.wasm"
)

// World is what a run drew at random, recorded in the report so that a
// run can be repeated (Options.Seed: the same secrets, keys and canaries;
// the clock is drawn after the run's own start). Nothing in it is a constant a
// connector could look for: the logical time, the node name its keys are
// computed under, the secret values and every canary come from Seed.
type World struct {
	// Seed draws everything else.
	Seed uint64 `json:"seed"`
	// Now is the logical time of the activations of the checks that
	// judge behaviour (duplicate-delivery, data-classes), with what the
	// fixtures record at fixturetest.Now rewritten to it; the fixtures
	// and determinism checks run at fixturetest.Now, where the fixtures
	// record their outputs.
	Now time.Time `json:"now"`
}

// CanonicalJSON renders the report with sorted keys, the form that is
// signed.
func (r *Report) CanonicalJSON() ([]byte, error) {
	return strictyaml.SortedJSON(r)
}
