//go:build !race

// The corpus and the examples certify about a hundred connectors, each
// in sandboxed processes; the race detector would only slow the recorder
// that serves them. make unit runs this package again without it.

package certify

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/flowgen-dev/flowgen/runtime/store/pgstore/pgtest"
)

// TestEveryExampleConnectorIsCertified: no check fails for any connector
// under examples (normalize is covered, signed, above). Warnings are
// allowed: they name fixtures worth adding.
func TestEveryExampleConnectorIsCertified(t *testing.T) {
	specs, _ := filepath.Glob("../examples/connectors/*/connector.yaml")
	if len(specs) < 5 {
		t.Fatalf("found %d example connectors", len(specs))
	}
	for _, spec := range specs {
		dir := filepath.Dir(spec)
		if filepath.Base(dir) == "normalize" {
			continue
		}
		t.Run(filepath.Base(dir), func(t *testing.T) {
			t.Parallel()
			r, err := Run(context.Background(), dir, Options{FixtureDatabase: pgtest.DatabaseURL()})
			if err != nil {
				t.Fatal(err)
			}
			for _, c := range r.Checks {
				if c.Outcome == Fail {
					t.Errorf("%s failed: %s\n%s", c.Name, c.Summary, strings.Join(c.Evidence, "\n"))
				}
			}
			if r.ArtifactDigest == "" {
				t.Error("no artifact digest in the report")
			}
		})
	}
}

// corpus lists the adversarial connectors under testdata that must be
// refused: each is a realistic way to cheat or to get it wrong, and must
// fail check with evidence containing evidence. With only set, no other
// check may fail.
var corpus = []struct {
	dir, check, evidence string
	only                 bool
}{
	// The spec gate.
	{"noidemkey", "spec", "error DAG004: effectful connector broken.no_key has no idempotency key", true},
	{"tokencharge", "spec", `error FMT006: auth.tokenURL "https://api.pay.example/v1/charges": its last path segment does not name a token`, true},
	{"wrongkind", "spec", "error FIX002: fixture \"throttled\" expects Permanent, but the error answer that decides it is status 429", true},
	{"unclassified", "spec", `error DATA101: property "email" has no x-data-class`, true},
	// What cannot become a confined module.
	{"execproc", "build", "connector.go:4:2: github.com/flowgen-dev/flowgen/certify/testdata/execproc imports os/exec: a confined connector starts no processes", true},
	// What the module tried and the host refused, however it was reached.
	{"fileread", "confinement", "file during an activation: open /etc/hostname", true},
	{"readonlywrite", "confinement", "file during an activation: open for writing /tmp/flowgen-readonly-write", true},
	{"dnslookup", "confinement", "file during an activation: open /etc/hosts", true},
	{"httpclient", "confinement", "file during an activation: open /etc/hosts", true},
	{"runtimebypass", "confinement", "file during an activation: open /etc/hosts", true},
	{"grantsbypass", "confinement", "file during an activation: lstat /etc", true},
	{"waivenet", "confinement", "file during an activation: open /etc/hosts", true},
	{"methodoverride", "confinement", "capability during an activation: a read of https://api.crm.example/customers/c-1 asks, in header X-HTTP-Method-Override, to be DELETE", false},
	// What only running it shows.
	{"doubleretry", "fixtures", "the connector repeated its last request 1 time(s) by itself, but its spec makes the retry owner orchestrator", false},
	{"methodoverride", "fixtures", "a read may not ask to be another method", false},
	{"firstkey", "fixtures", `fixture "echo": output differs from the fixture`, true},
	{"doublecharge", "duplicate-delivery", "effect(s) under duplicate deliveries, but one delivery has 1", true},
	{"attemptkey", "duplicate-delivery", "effect(s) under duplicate deliveries, but one delivery has 1", true},
	{"blobattempt", "duplicate-delivery", "effect(s) under duplicate deliveries, but one delivery has 1", true},
	{"kvappend", "duplicate-delivery", "effect(s) under duplicate deliveries, but one delivery has 1", true},
	{"tokenstash", "duplicate-delivery", "effect(s) under duplicate deliveries, but one delivery has 1", true},
	{"tokenevery", "duplicate-delivery", "asked for a new token although the spec declares a token cache", true},
	{"defaultoff", "duplicate-delivery", "with other key fields and default params (key", true},
	{"collidingkey", "duplicate-delivery", "fixture paid with other key fields (key", true},
	{"collidingkey", "duplicate-delivery", "delivered once, it took no effect", true},
	{"noeffect", "duplicate-delivery", "fixture paid (key", true},
	{"piileak", "data-classes", "a pii.email value from input /email appears in output /greeting, classified public", true},
	{"piimasked", "data-classes", `the pii.email value of input /email changes output /ref of fixture "referenced", classified below it, by as little as it changed`, true},
	{"piierror", "data-classes", "the pii.email value from input /email appears in the error message", true},
	{"secretleak", "data-classes", "the value of secret crm/api-key appears in output /greeting", true},
	{"secretlog", "data-classes", "the secret value from secret crm/api-key was written to stderr (as it is) (logs)", true},
	{"badhost", "egress", "records a request to evil.example:443, which is not in egress [api.good.example]", false},
	// What only an unrecognisable world, inputs from the schemas, every
	// attempt, a lost answer, a live provider or a full search shows.
	{"recognizer", "duplicate-delivery", "effect(s) under duplicate deliveries, but one delivery has 1", false},
	{"clockstill", "duplicate-delivery", "effect(s) under duplicate deliveries, but one delivery has 1", true},
	{"sleepclock", "duplicate-delivery", "effect(s) under duplicate deliveries, but one delivery has 1", false},
	{"enumeffect", "duplicate-delivery", "generated: fixture shipped with input speed = express (enum)", true},
	{"comboeffect", "duplicate-delivery", "generated: fixture shipped with input express = true and gift = true", true},
	{"retrynewkey", "duplicate-delivery", "when the provider's answer to the first effect was lost and the input delivered again, but one delivery has 1", true},
	{"secondlost", "duplicate-delivery", "when the provider's answer to effect 2 of a delivery was lost and the input delivered again, but one delivery has 2", true},
	{"lateattempt", "duplicate-delivery", "effect(s) under duplicate deliveries, but one delivery has 1", true},
	{"twopercall", "duplicate-delivery", "it took 2 effects, but the spec declares at most 1 per call", true},
	{"overridepost", "duplicate-delivery", "effect(s) under duplicate deliveries, but one delivery has 1", false},
	{"readmodifywrite", "duplicate-delivery", "effect(s) under duplicate deliveries, but one delivery has 1", true},
	{"sharedkey", "duplicate-delivery", "fixture first item and fixture second item have different inputs but one key", true},
	{"notifyeffect", "duplicate-delivery", "effect(s) under duplicate deliveries, but one delivery has 1", true},
	{"computednotify", "duplicate-delivery", "effect(s) under duplicate deliveries, but one delivery has 1", true},
	{"secretshuffle", "data-classes", "the value of secret crm/api-key changes what the connector writes to its logs", true},
	{"chunkleak", "data-classes", "the value of secret pay/key changes requests to hosts other than [api.pay.example]", true},
	{"authleak", "data-classes", "every request answered 401: the secret value from secret notify/token appears in the error message", true},
	{"lateleak", "data-classes", "the secret value from secret crm/api-key was written to stderr (hex-encoded) (logs)", true},
	{"numberleak", "data-classes", "a financial.account value from input /account appears in output /check, classified public", true},
	{"base64secret", "data-classes", "the secret value from secret crm/api-key was written to stderr (base64-encoded) (logs)", true},
	{"countbomb", "duplicate-delivery", "an input with key fields drawn anew", true},
	{"keycount", "duplicate-delivery", "an input with key fields drawn anew", true},
	{"datebomb", "duplicate-delivery", "effect(s), but one delivery", true},
	{"dupheader", "duplicate-delivery", "names its dedupe value ambiguously: it sends its Idempotency-Key header on 2 lines", true},
	{"dupbodyfield", "duplicate-delivery", "names its dedupe value ambiguously: its body names the idempotency_key field more than once", true},
	{"shortkey", "duplicate-delivery", "a write to api.pay.example:443/charges is deduplicated on its Idempotency-Key header, a 6-character value that carries neither the activation's key nor its key fields", true},
	{"oncecapture", "determinism", "delivered 1st of 2 to one instance and 2nd to another returned other output (what the instance served before changes it: state that outlives the activation)", true},
	{"cutnameuuid", "duplicate-delivery", "a write to api.transfers.example:443/v1/transfers is deduplicated on its X-Idempotency-Key header, a 36-character value that carries neither the activation's key nor its key fields", true},
}

// goodControls are legitimate connectors that must certify: a provider
// that deduplicates on a body field (Square) and a token whose prefix the
// connector checks, sorted map keys, an effect that an enum value turns
// off (a preview), a read before an idempotent write (a provider that
// remembers it), a library whose initializer reads crypto/rand, an
// output stamped with the activation's time (run at a drawn one), two
// fixtures posting to one URL, a KV record, a waiver, the order id as the
// Idempotency-Key, the key in UUID form for a provider that wants one,
// a name-based UUID of the key in the connector's namespace, declared, an
// upsert that returns the id its database's identity column assigned, a
// table built lazily under sync.Once (static analysis passes it).
var goodControls = []string{"goodorderkey", "goodtwofixtures", "goodkv", "goodwaiver", "goodbodyfield", "goodsortedkeys", "gooddryrun", "goodreadthenput", "gooduuid", "goodtimestamp", "gooduuidkey", "goodnameuuid", "goodidentityid", "goodoncetable", "goodoauth", "goodpresign"}

// contained lists connectors of the corpus that depend on the host or
// reach for it natively, but that confinement makes harmless: in their
// module the clock is the activation's logical time, the environment is
// empty, the host's name, processors and sockets are the module's own,
// scheduling and map order follow the activation. They certify, and
// static analysis's finding stays in the report as a warning, for the
// author and for pull policies (evidence "" expects no finding).
var contained = []struct{ dir, evidence string }{
	{"strictclock", "connector.go:10:14: clock: calls time.Now"},
	{"clockvalue", "connector.go:13:9: clock: calls time.Now"},
	{"subpkgclock", "stamp/stamp.go:7:35: clock: calls time.Now"},
	{"depclock", "timeutil/timeutil.go:8:38: clock: calls time.Now"},
	{"fakegenerated", "zz_helpers_gen.go:8:16: env: calls os.Getenv"},
	{"initenv", "connector.go:10:22: env: calls os.Getenv"},
	{"hostname", "host: calls os.Hostname"},
	{"rawsocket", "net: calls net.Dial"},
	{"globalstate", "global: Run writes package variable calls"},
	{"goroutine", "goroutine: a goroutine makes the order"},
	{"maporder", "connector.go:9:2: maporder: ranging over a map"},
	{"linkname", "syscall: calls github.com/flowgen-dev/flowgen/certify/testdata/linkname.nanotime, which has no body"},
	{"excludedfile", "excluded: prod.go is not part of the certified build"},
	{"cgofile", "cgo: native.go uses cgo"},
	{"schedheader", ""},
}

// TestCorpus: every adversarial connector fails the check about its
// defect, with evidence that names it; and the good ones certify, one of
// them with a waiver that the report records.
func TestCorpus(t *testing.T) {
	reports := map[string]*Report{}
	var mu sync.Mutex
	t.Run("certify", func(t *testing.T) {
		dirs := slices.Clone(goodControls)
		for _, c := range corpus {
			if !slices.Contains(dirs, c.dir) {
				dirs = append(dirs, c.dir)
			}
		}
		for _, c := range contained {
			dirs = append(dirs, c.dir)
		}
		for _, dir := range dirs {
			t.Run(dir, func(t *testing.T) {
				t.Parallel()
				r, err := Run(context.Background(), filepath.Join("testdata", dir), Options{FixtureDatabase: pgtest.DatabaseURL()})
				if err != nil {
					t.Fatal(err)
				}
				mu.Lock()
				reports[dir] = r
				mu.Unlock()
			})
		}
	})
	for _, c := range corpus {
		r := reports[c.dir]
		if r == nil {
			t.Fatalf("%s: not certified", c.dir)
		}
		if r.Passed() {
			t.Errorf("%s: certified", c.dir)
			continue
		}
		ch := outcomes(r)[c.check]
		if ch.Outcome != Fail || !strings.Contains(strings.Join(ch.Evidence, "\n"), c.evidence) {
			t.Errorf("%s: %s is %s, want a failure naming %q:\n%s", c.dir, c.check, ch.Outcome, c.evidence, strings.Join(ch.Evidence, "\n"))
		}
		if c.only {
			for _, other := range r.Checks {
				if string(other.Name) != c.check && other.Outcome == Fail {
					t.Errorf("%s: %s failed too: %s", c.dir, other.Name, other.Summary)
				}
			}
		}
	}
	// datebomb's Switch: until a month before it, only the later logical
	// times can see the bomb; after, it goes off in every world.
	if time.Now().Before(time.Date(2027, time.January, 10, 0, 0, 0, 0, time.UTC).AddDate(0, 0, -31)) {
		if ch := outcomes(reports["datebomb"])["duplicate-delivery"]; !strings.Contains(strings.Join(ch.Evidence, "\n"), "(a connector whose keys or effects change with the date)") {
			t.Errorf("datebomb: its date bomb is not named:\n%s", strings.Join(ch.Evidence, "\n"))
		}
	}
	for _, c := range contained {
		r := reports[c.dir]
		if r == nil {
			t.Fatalf("%s: not certified", c.dir)
		}
		for _, ch := range r.Checks {
			if ch.Outcome == Fail {
				t.Errorf("%s: %s failed, though confinement contains it: %s\n%s", c.dir, ch.Name, ch.Summary, strings.Join(ch.Evidence, "\n"))
			}
		}
		sa := outcomes(r)["static-analysis"]
		if c.evidence != "" && (sa.Outcome != Warn || !strings.Contains(strings.Join(sa.Evidence, "\n"), c.evidence)) {
			t.Errorf("%s: static-analysis is %s, want a warning naming %q:\n%s", c.dir, sa.Outcome, c.evidence, strings.Join(sa.Evidence, "\n"))
		}
	}
	for _, good := range goodControls {
		for _, ch := range reports[good].Checks {
			if ch.Outcome == Fail {
				t.Errorf("%s: %s failed: %s\n%s", good, ch.Name, ch.Summary, strings.Join(ch.Evidence, "\n"))
			}
		}
	}
	if sa := outcomes(reports["goodoncetable"])["static-analysis"]; sa.Outcome != Pass {
		t.Errorf("goodoncetable: static-analysis is %s, want a pass (lazy initialisation under sync.Once):\n%s", sa.Outcome, strings.Join(sa.Evidence, "\n"))
	}
	w := reports["goodwaiver"].Waivers
	if len(w) != 1 || !w[0].Used || w[0].Rule != "rand" || w[0].File != "connector.go" || !strings.Contains(w[0].Reason, "random nonce") {
		t.Errorf("the waiver is not in the report as evidence: %+v", w)
	}
	if w := reports["gooduuid"].Waivers; len(w) != 1 || !w[0].Used || w[0].Package != "github.com/google/uuid" {
		t.Errorf("a waiver of a dependency's finding: %+v", w)
	}
	if ch := outcomes(reports["goodwaiver"])["static-analysis"]; ch.Outcome != Warn || !strings.Contains(strings.Join(ch.Evidence, "\n"), "waived at connector.go:15") {
		t.Errorf("the waived finding is not evidence: %+v", ch)
	}
	if n := len(corpus) + len(contained); n < 40 {
		t.Errorf("the corpus has %d cases", n)
	}
}
