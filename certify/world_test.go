package certify

import (
	"strings"
	"testing"
	"time"

	"github.com/flowgen-dev/flowgen/connectorspec"
	"github.com/flowgen-dev/flowgen/internal/httpfixture"
)

// TestDrawnWorld: a world drawn from one seed is the same world again,
// another seed draws another, and drawn values keep the shape of what
// they stand for without any marker common to runs.
func TestDrawnWorld(t *testing.T) {
	spec := &connectorspec.Spec{Secrets: []connectorspec.Secret{
		{Handle: "stripe/key", Format: &connectorspec.SecretFormat{Prefix: "sk_live_", Alphabet: connectorspec.AlphabetBase62, Length: 24}},
		{Handle: "slack/webhook"},
		{Handle: "plain"},
	}}
	m := &httpfixture.Manifest{}
	m.FixtureEnv = &struct {
		Secrets  map[string]string
		Database *struct{ Setup string }
	}{Secrets: map[string]string{"slack/webhook": "https://hooks.slack.com/services/T000/B000/XXXX"}}
	started := time.Date(2026, 11, 27, 9, 0, 0, 0, time.UTC)
	a, b, other := newDrawn(spec, m, 7, started), newDrawn(spec, m, 7, started), newDrawn(spec, m, 8, started)
	if a.Now != b.Now || a.node != b.node || a.secrets["plain"] != b.secrets["plain"] {
		t.Fatal("one seed drew two worlds")
	}
	if a.Now == other.Now || a.node == other.node || a.secrets["plain"] == other.secrets["plain"] || a.secrets["stripe/key"] == other.secrets["stripe/key"] {
		t.Fatal("two seeds drew one world")
	}
	if a.Now.Before(started) || a.Now.After(started.Add(30*24*time.Hour)) {
		t.Errorf("the clock %s is not within 30 days after the run's start", a.Now)
	}
	if k := a.secrets["stripe/key"]; !strings.HasPrefix(k, "sk_live_") || len(k) != len("sk_live_")+24 {
		t.Errorf("a formatted secret: %q", k)
	}
	if w := a.secrets["slack/webhook"]; !strings.HasPrefix(w, "https://hooks.slack.com/") || strings.Contains(w, "T000") || len(w) < len("https://hooks.slack.com/services/T000/B000/XXXX") {
		t.Errorf("a URL secret keeps its host and draws its path: %q", w)
	}
	// A path segment the spec names (a provider contract's path) is
	// public: the drawn URL keeps it, so the contract still matches.
	spec.Idempotency = &connectorspec.Idempotency{ProviderDedupe: []connectorspec.ProviderDedupe{{Method: "POST", Path: "/services/*", Header: "Idempotency-Key"}}}
	if w := newDrawn(spec, m, 7, started).secrets["slack/webhook"]; !strings.HasPrefix(w, "https://hooks.slack.com/services/") || strings.Contains(w, "T000") || strings.Contains(w, "XXXX") {
		t.Errorf("a URL secret keeps the path segments its spec names, and draws the rest: %q", w)
	}
	spec.Idempotency = nil
	if p := a.secrets["plain"]; len(p) != 32 || strings.Contains(p, "fixture") || strings.Contains(p, "plain") {
		t.Errorf("a secret without a shape: %q", p)
	}
	for example, check := range map[string]func(string) bool{
		"ada@example.com": func(s string) bool { return strings.HasSuffix(s, "@example.com") && !strings.HasPrefix(s, "ada@") },
		"cus_Q1w2E3":      func(s string) bool { return strings.HasPrefix(s, "cus_") && len(s) >= len("cus_")+minDrawn },
		"ord-1001":        func(s string) bool { return strings.HasPrefix(s, "ord-") && s != "ord-1001" },
	} {
		if got := a.like(example, true); !check(got) {
			t.Errorf("like(%q) = %q", example, got)
		}
	}
	if got := a.like("ord-1001", false); len(got) != len("ord-1001") || got[4] < '0' || got[4] > '9' {
		t.Errorf("like without growing keeps length and classes: %q", got)
	}
}

// TestGeneratedInputs: from a fixture and the schemas come every other
// enum value, an optional field left out, numbers at their bounds, each
// with a key of its own, all valid.
func TestGeneratedInputs(t *testing.T) {
	spec, diags := connectorspec.Load("testdata/gooddryrun/connector.yaml")
	if spec == nil || diags.HasErrors() {
		t.Fatalf("load: %v", diags)
	}
	manifest, err := connectorspec.Manifest(spec)
	if err != nil {
		t.Fatal(err)
	}
	m, err := httpfixture.Parse(manifest)
	if err != nil {
		t.Fatal(err)
	}
	c := &run{spec: spec, manifest: m, world: newDrawn(spec, m, 3, time.Now())}
	var names []string
	keys := map[string]bool{}
	for _, in := range c.generatedInputs() {
		names = append(names, in.name)
		key, err := c.key(in.fx.Input)
		if err != nil || keys[key] || !c.validInput(in.fx.Input) {
			t.Errorf("%s: key %s (%v), valid %v", in.name, key, err, c.validInput(in.fx.Input))
		}
		keys[key] = true
	}
	all := strings.Join(names, "\n")
	for _, want := range []string{"input mode = preview (enum)", "input mode absent", "input copies = 1 (its minimum)", "input copies = 3 (its maximum)", "input copies absent"} {
		if !strings.Contains(all, want) {
			t.Errorf("no generated input with %s in:\n%s", want, all)
		}
	}
}
