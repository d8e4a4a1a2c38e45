// Package policy is the pull policy: what a platform team accepts from the
// registry, stated in a small YAML file and checked against a version's
// signed certification evidence (the report, and the spec manifest whose
// digest the report records), never against labels a publisher could set.
//
//	apiVersion: flowgen.dev/v1
//	kind: PullPolicy
//	maxEffects: ReadOnly              # Pure < ReadOnly < Effectful
//	determinism: [Strict, Stable]     # allowed classes
//	egress: [api.stripe.com, "*.example.com"]  # the connector's egress must fall within
//	forbiddenDataClasses: [pii]       # no port may carry pii or pii.*
//	requiredChecks: [static-analysis, duplicate-delivery]  # must have passed
//	publishers: [ci-payments]         # token names allowed to have published
//	namespaces: [payments, catalog]
//	refuseWaivers: true               # no finding of static analysis may have been waived
//	requireConfined: true             # the default: a certified module, and flows run it confined
//
// Every field is optional; an absent field accepts everything. A report
// made without the sandbox (flowgen certify --insecure-no-sandbox) is
// refused whatever the policy says.
package policy

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/flowgen-dev/flowgen/artifact"
	"github.com/flowgen-dev/flowgen/certify/report"
	"github.com/flowgen-dev/flowgen/connectorspec"
	"github.com/flowgen-dev/flowgen/diag"
	"github.com/flowgen-dev/flowgen/flowtype"
	"github.com/flowgen-dev/flowgen/internal/strictyaml"
	"github.com/flowgen-dev/flowgen/signing"
)

// Kind is the policy file's kind.
const Kind = "PullPolicy"

// Policy is a parsed pull policy.
type Policy struct {
	diag.Source          `json:"-"`
	APIVersion           string                 `json:"apiVersion" flowgen:"required"`
	Kind                 string                 `json:"kind" flowgen:"required"`
	MaxEffects           *flowtype.Effects      `json:"maxEffects,omitempty"`
	Determinism          []flowtype.Determinism `json:"determinism,omitempty"`
	Egress               *[]string              `json:"egress,omitempty"`
	ForbiddenDataClasses []string               `json:"forbiddenDataClasses,omitempty"`
	RequiredChecks       []report.CheckName     `json:"requiredChecks,omitempty"`
	Publishers           []string               `json:"publishers,omitempty"`
	Namespaces           []string               `json:"namespaces,omitempty"`
	// RefuseWaivers refuses a connector whose certification accepted any
	// //flowgen:allow waiver.
	RefuseWaivers bool `json:"refuseWaivers,omitempty"`
	// RequireConfined (true when absent) refuses a connector whose
	// certification names no module, and marks what is pulled so that a
	// flow may not run it natively (docs/codegen.md, "Pulled
	// connectors"). false lets a flow say run: native.
	RequireConfined *bool `json:"requireConfined,omitempty"`
}

// ConfinedRequired reports whether p requires pulled connectors to run
// confined: unless it says requireConfined: false. A nil policy does.
func (p *Policy) ConfinedRequired() bool {
	return p == nil || p.RequireConfined == nil || *p.RequireConfined
}

// Parse reads a policy. The error lists every problem with its
// file:line:col.
func Parse(file string, data []byte) (*Policy, error) {
	var p Policy
	root, diags := strictyaml.Unmarshal(file, data, &p)
	if root != nil {
		connectorspec.CheckHeader(&diags, p.Source, p.APIVersion, p.Kind, Kind)
		for _, c := range p.RequiredChecks {
			if !slices.Contains(report.CheckNames(), c) {
				diags.Add(p.At("requiredChecks"), diag.FMT006, fmt.Sprintf("one of %s", joinStrings(report.CheckNames())), "unknown check %q", c)
			}
		}
	}
	if diags.HasErrors() {
		// Every problem, one per line, like a compiler.
		var b strings.Builder
		diags.WriteText(&b)
		return nil, errors.New(strings.TrimRight(b.String(), "\n"))
	}
	return &p, nil
}

// Evidence is what a policy is checked against. Callers must have verified
// the report's signature and that Spec hashes to Report.ManifestDigest.
type Evidence struct {
	Namespace string
	Publisher string
	Report    *report.Report
	// Spec is the connector manifest (the spec with bundled schemas).
	Spec json.RawMessage
}

// Violation is one failed rule.
type Violation struct {
	Rule     string `json:"rule"`
	Message  string `json:"message"`
	Evidence string `json:"evidence"`
}

func (v Violation) String() string {
	return v.Rule + ": " + v.Message + " (evidence: " + v.Evidence + ")"
}

// Check returns every rule the evidence fails; none means accepted.
func (p *Policy) Check(e Evidence) []Violation {
	var out []Violation
	fail := func(rule, evidence, format string, args ...any) {
		out = append(out, Violation{Rule: rule, Message: fmt.Sprintf(format, args...), Evidence: evidence})
	}
	var spec struct {
		Effects     flowtype.Effects     `json:"effects"`
		Determinism flowtype.Determinism `json:"determinism"`
		Egress      []string             `json:"egress"`
		Inputs      map[string]any       `json:"inputs"`
		Outputs     map[string]any       `json:"outputs"`
		Params      any                  `json:"params"`
	}
	specOK := json.Unmarshal(e.Spec, &spec) == nil
	if !specOK {
		fail("evidence", "spec manifest", "the certified spec manifest does not parse")
		return out
	}
	const fromSpec = "certified spec manifest (sha256 %s, recorded in the signed report)"
	specEv := fmt.Sprintf(fromSpec, e.Report.ManifestDigest)
	if p.MaxEffects != nil && spec.Effects > *p.MaxEffects {
		fail("maxEffects", specEv, "the connector is %s; the policy allows at most %s", spec.Effects, *p.MaxEffects)
	}
	if len(p.Determinism) > 0 && !slices.Contains(p.Determinism, spec.Determinism) {
		fail("determinism", specEv, "the connector is %s; the policy allows %s", spec.Determinism, joinStrings(p.Determinism))
	}
	if p.Egress != nil {
		for _, host := range spec.Egress {
			if !flowtype.EgressWithin(host, *p.Egress) {
				fail("egress", specEv, "the connector may contact %s, outside the allowed %v", host, *p.Egress)
			}
		}
	}
	if len(p.ForbiddenDataClasses) > 0 {
		found := map[string][]string{}
		for port, schema := range spec.Inputs {
			collectClasses(schema, "inputs/"+port, found)
		}
		for port, schema := range spec.Outputs {
			collectClasses(schema, "outputs/"+port, found)
		}
		collectClasses(spec.Params, "params", found)
		for _, cls := range sortedKeys(found) {
			for _, forbidden := range p.ForbiddenDataClasses {
				if cls == forbidden || strings.HasPrefix(cls, forbidden+".") {
					fail("forbiddenDataClasses", specEv, "data class %s is on %s; the policy forbids %s", cls, strings.Join(found[cls], ", "), forbidden)
				}
			}
		}
	}
	for _, name := range p.RequiredChecks {
		c := e.Report.Check(name)
		switch {
		case c == nil:
			fail("requiredChecks", "signed certification report", "check %s did not run", name)
		case c.Outcome != report.Pass:
			fail("requiredChecks", "signed certification report", "check %s is %s: %s", name, c.Outcome, c.Summary)
		}
	}
	if e.Report.Insecure {
		fail("sandbox", "signed certification report", "the connector was certified without a sandbox (%s)", e.Report.Sandbox)
	}
	if p.ConfinedRequired() && e.Report.ModuleDigest == "" {
		fail("requireConfined", "signed certification report", "the certification names no module, so the connector cannot run confined")
	}
	if p.RefuseWaivers {
		for _, w := range e.Report.Waivers {
			if w.Used {
				fail("refuseWaivers", "signed certification report", "static analysis accepted a %s finding waived at %s:%d (%s)", w.Rule, w.File, w.Line, w.Reason)
			}
		}
	}
	if len(p.Publishers) > 0 && !slices.Contains(p.Publishers, e.Publisher) {
		fail("publishers", "registry audit record", "published by %q; the policy allows %v", e.Publisher, p.Publishers)
	}
	if len(p.Namespaces) > 0 && !slices.Contains(p.Namespaces, e.Namespace) {
		fail("namespaces", "registry namespace", "namespace %q; the policy allows %v", e.Namespace, p.Namespaces)
	}
	return out
}

// collectClasses records every x-data-class in a schema (including its
// bundled $defs) against where it was found.
func collectClasses(v any, where string, found map[string][]string) {
	switch x := v.(type) {
	case map[string]any:
		if cls, ok := x["x-data-class"].(string); ok && !slices.Contains(found[cls], where) {
			found[cls] = append(found[cls], where)
		}
		for _, k := range sortedKeys(x) {
			collectClasses(x[k], where, found)
		}
	case []any:
		for _, e := range x {
			collectClasses(e, where, found)
		}
	}
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

func joinStrings[T fmt.Stringer](xs []T) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = x.String()
	}
	return strings.Join(s, ", ")
}

// VerifiedEvidence builds Evidence from a version's files, checking first
// that the report is signed by pubPEM and that the manifest's spec is the
// one the report certified. Any failure is an error: a policy is never
// checked against unverified evidence.
func VerifiedEvidence(pubPEM, reportJSON, reportSig, manifest []byte, namespace, publisher string) (Evidence, error) {
	if err := signing.Verify(pubPEM, reportJSON, reportSig); err != nil {
		return Evidence{}, fmt.Errorf("certification report: %w", err)
	}
	var r report.Report
	if err := json.Unmarshal(reportJSON, &r); err != nil {
		return Evidence{}, fmt.Errorf("certification report: %w", err)
	}
	var m artifact.Manifest
	if err := json.Unmarshal(manifest, &m); err != nil {
		return Evidence{}, fmt.Errorf("artifact manifest: %w", err)
	}
	got, err := m.SpecDigest()
	if err != nil {
		return Evidence{}, err
	}
	if got != r.ManifestDigest {
		return Evidence{}, fmt.Errorf("artifact manifest: its spec hashes to %s, but the signed report certified %s", got, r.ManifestDigest)
	}
	return Evidence{Namespace: namespace, Publisher: publisher, Report: &r, Spec: m.Spec}, nil
}
