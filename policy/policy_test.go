package policy

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/flowgen-dev/flowgen/certify/report"
)

func TestParseReportsPositions(t *testing.T) {
	t.Parallel()
	_, err := Parse("p.yaml", []byte("apiVersion: flowgen.dev/v1\nkind: PullPolicy\nmaxEffects: Sometimes\nrequiredChecks: [fixtures, vibes]\nsurprise: 1\n"))
	if err == nil {
		t.Fatal("accepted a bad policy")
	}
	for _, want := range []string{"p.yaml:3:", "Sometimes", "p.yaml:4:", `"vibes"`, "p.yaml:5:", "surprise"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error does not mention %q:\n%v", want, err)
		}
	}
	if _, err := Parse("k.yaml", []byte("apiVersion: flowgen.dev/v1\nkind: ConnectorSpec\n")); err == nil || !strings.Contains(err.Error(), "k.yaml:2:") {
		t.Errorf("wrong kind: %v", err)
	}
}

func TestCheckNamesEveryFailedRule(t *testing.T) {
	t.Parallel()
	p, err := Parse("p.yaml", []byte(`apiVersion: flowgen.dev/v1
kind: PullPolicy
maxEffects: ReadOnly
determinism: [Strict]
egress: ["*.example.com", api.stripe.com]
forbiddenDataClasses: [pii]
requiredChecks: [fixtures, determinism]
publishers: [ci]
namespaces: [catalog]
refuseWaivers: true
`))
	if err != nil {
		t.Fatal(err)
	}
	spec, _ := json.Marshal(map[string]any{
		"effects": "Effectful", "determinism": "BestEffort",
		"egress": []string{"api.stripe.com", "hooks.example.com", "*.evil.test", "*.example.com"},
		"inputs": map[string]any{"in": map[string]any{"properties": map[string]any{
			"email": map[string]any{"x-data-class": "pii.email"}, "id": map[string]any{"x-data-class": "public"}}}},
		"outputs": map[string]any{"out": map[string]any{"$defs": map[string]any{"c": map[string]any{"x-data-class": "pii"}}}},
	})
	report := &report.Report{ManifestDigest: "abc", Checks: []report.Check{{Name: "fixtures", Outcome: report.Pass}, {Name: "determinism", Outcome: report.Warn, Summary: "skipped"}},
		Waivers: []report.Waiver{{File: "connector.go", Line: 12, Rule: "asm", Reason: "vendored SIMD", Used: true}, {File: "connector.go", Line: 30, Rule: "env", Refused: "rule env can never be waived"}}}
	got := p.Check(Evidence{Namespace: "payments", Publisher: "someone", Report: report, Spec: spec})
	var rules []string
	for _, v := range got {
		rules = append(rules, v.Rule+": "+v.Message)
	}
	want := []string{
		"maxEffects: the connector is Effectful; the policy allows at most ReadOnly",
		"determinism: the connector is BestEffort; the policy allows Strict",
		"egress: the connector may contact *.evil.test, outside the allowed [*.example.com api.stripe.com]",
		"forbiddenDataClasses: data class pii is on outputs/out; the policy forbids pii",
		"forbiddenDataClasses: data class pii.email is on inputs/in; the policy forbids pii",
		"requiredChecks: check determinism is warn: skipped",
		"requireConfined: the certification names no module, so the connector cannot run confined",
		"refuseWaivers: static analysis accepted a asm finding waived at connector.go:12 (vendored SIMD)",
		`publishers: published by "someone"; the policy allows [ci]`,
		`namespaces: namespace "payments"; the policy allows [catalog]`,
	}
	if !slices.Equal(rules, want) {
		t.Errorf("violations:\n%s\nwant:\n%s", strings.Join(rules, "\n"), strings.Join(want, "\n"))
	}
	for _, v := range got {
		if v.Evidence == "" {
			t.Errorf("%s names no evidence", v.Rule)
		}
	}
	empty, _ := Parse("e.yaml", []byte("apiVersion: flowgen.dev/v1\nkind: PullPolicy\n"))
	if v := empty.Check(Evidence{Report: report, Spec: spec}); len(v) != 1 || v[0].Rule != "requireConfined" {
		t.Errorf("an empty policy accepted a certification without a module: %v", v)
	}
	loose, _ := Parse("l.yaml", []byte("apiVersion: flowgen.dev/v1\nkind: PullPolicy\nrequireConfined: false\n"))
	if v := loose.Check(Evidence{Report: report, Spec: spec}); len(v) != 0 {
		t.Errorf("requireConfined: false refused a certification without a module: %v", v)
	}
	report.ModuleDigest = "sha256:" + strings.Repeat("ab", 32)
	if v := empty.Check(Evidence{Report: report, Spec: spec}); len(v) != 0 {
		t.Errorf("an empty policy rejected: %v", v)
	}
	insecure := *report
	insecure.Insecure, insecure.Sandbox = true, "unsandboxed (--insecure-no-sandbox)"
	if v := empty.Check(Evidence{Report: &insecure, Spec: spec}); len(v) != 1 || v[0].Rule != "sandbox" {
		t.Errorf("an unsandboxed certification passed an empty policy: %v", v)
	}
}
