package certify

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/flowgen-dev/flowgen/certify/recorder"
	"github.com/flowgen-dev/flowgen/certify/wire"
	"github.com/flowgen-dev/flowgen/flowtype"
	"github.com/flowgen-dev/flowgen/internal/httpfixture"
	"github.com/flowgen-dev/flowgen/internal/strictyaml"
	"github.com/flowgen-dev/flowgen/runtime/wasmabi"
	"github.com/flowgen-dev/flowgen/testharness/fixturetest"
)

// fixtureSession runs every fixture in order in a fresh world, each
// fixture starting from an empty state, answered strictly from its own
// recording.
func (c *run) fixtureSession(v variant) (*recorder.Session, *recorder.World, processRun, error) {
	world, err := c.newWorld(fixturetest.Now)
	if err != nil {
		return nil, nil, processRun{}, err
	}
	s := &recorder.Session{World: world, Mode: recorder.Cassette, Fresh: true, Concurrency: 1}
	n := len(c.manifest.Fixtures)
	rounds := []int{0} // delivery ids start at 0 for the judged round
	if v.warm {
		rounds = []int{n, 0}
	}
	for _, first := range rounds {
		for i, fx := range c.manifest.Fixtures {
			p, err := c.fixturePlan(first+i, fx)
			if err != nil {
				return nil, nil, processRun{}, err
			}
			s.Deliveries = append(s.Deliveries, p)
		}
	}
	return s, world, c.runSession(s, v), nil
}

func (c *run) fixtures(ch *Check) {
	if len(c.manifest.Fixtures) == 0 {
		ch.Outcome, ch.Summary = Fail, "the spec has no fixtures"
		return
	}
	_, world, p, err := c.fixtureSession(variants[0])
	if err != nil {
		ch.Outcome, ch.Summary = Fail, err.Error()
		return
	}
	c.fixtureRun, c.fixtureWorld = p, world
	var authored []string
	for i, fx := range c.manifest.Fixtures {
		problems := c.judgeFixture(p, i, fx)
		if len(problems) > 0 && len(c.spec.Secrets) > 0 && c.endsAsRecordedWithAuthorsSecrets(i, fx) {
			authored = append(authored, fx.Name)
			continue
		}
		ch.Evidence = append(ch.Evidence, problems...)
	}
	ch.Evidence = append(ch.Evidence, p.Protocol...)
	ch.Evidence = append(ch.Evidence, c.violations(world)...)
	if len(ch.Evidence) == 0 {
		ch.Evidence = append(ch.Evidence, c.instanceLifetime()...)
	}
	if len(ch.Evidence) > 0 {
		ch.Outcome, ch.Summary = Fail, "a fixture's output, error or requests are not what it records"
		return
	}
	ch.Outcome, ch.Summary = Pass, fmt.Sprintf("%d fixtures pass in the sandbox, their requests answered by the recorder, and end alike on each of the %d activations one instance serves", len(c.manifest.Fixtures), wasmabi.InstanceActivations)
	for _, name := range authored {
		ch.Evidence = append(ch.Evidence, fmt.Sprintf("fixture %q ends as recorded with the secret values the author's fixture tests use, not with drawn ones: what it records depends on a secret's value (a signature made with it)", name))
	}
}

// endsAsRecordedWithAuthorsSecrets runs fixture i alone with the secret
// values the author's own fixture tests resolve (fixtureEnv, or values of
// the declared shape) and reports whether it then ends as it records: a
// fixture may record what a secret's value decides (a signature made with
// it, a presigned link), which no drawn value reproduces. Whether a
// secret leaks is data-classes' to judge, in the drawn world.
func (c *run) endsAsRecordedWithAuthorsSecrets(i int, fx httpfixture.Fixture) bool {
	world, err := c.newWorld(fixturetest.Now)
	if err != nil {
		return false
	}
	key, err := c.key(fx.Input)
	if err != nil {
		return false
	}
	secrets := map[string]string{}
	for _, sec := range c.spec.Secrets {
		secrets[sec.Handle] = c.manifest.Secret(sec.Handle)
	}
	s := &recorder.Session{World: world, Mode: recorder.Cassette, Fresh: true, Concurrency: 1, Deliveries: []recorder.Planned{{
		Delivery: wire.Delivery{ID: i, Params: fx.Params, Input: fx.Input, Key: key, Attempt: 1, Now: fixturetest.Now,
			Seed: c.deliverySeed(i), Secrets: secrets, Timeout: deliveryTimeout},
		Exchanges: fx.HTTP,
	}}}
	return len(c.judgeFixtureAs(c.runSession(s, variants[0]), i, fx)) == 0
}

// instanceLifetime delivers the fixtures in turn to one instance for its
// whole life (wasmabi.InstanceActivations activations, as production's
// pool gives it), against a provider played live, each in a world of its
// own, beside a run where each fixture is delivered once: every
// activation must end as the fixture's first delivery did, so that a connector that counts its
// activations and answers otherwise after some is seen doing it (what it
// keeps to save work, a cached token, changes nothing). The effects of
// such a life are duplicate delivery's to judge. It reports the first
// activation that differs.
func (c *run) instanceLifetime() []string {
	fixtures := c.manifest.Fixtures
	deliver := func(n int) (processRun, error) {
		order := make([]httpfixture.Fixture, n)
		for k := range order {
			order[k] = fixtures[k%len(fixtures)]
		}
		return c.deliverToOneInstance(order)
	}
	once, err := deliver(len(fixtures))
	if err != nil {
		return []string{err.Error()}
	}
	life, err := deliver(wasmabi.InstanceActivations)
	if err != nil {
		return []string{err.Error()}
	}
	for k := range wasmabi.InstanceActivations {
		i := k % len(fixtures)
		first, ok := once.Results[i]
		if !ok {
			return []string{fmt.Sprintf("fixture %q delivered once to a live provider: no result: %s", fixtures[i].Name, once.failure())}
		}
		got, ok := life.Results[k]
		what := fmt.Sprintf("activation %d of one instance's %d (fixture %q)", k+1, wasmabi.InstanceActivations, fixtures[i].Name)
		switch {
		case !ok:
			return []string{what + ": no result: " + life.failure()}
		case (first.Error == nil) != (got.Error == nil) || first.Error != nil && first.Error.Kind != got.Error.Kind:
			return []string{fmt.Sprintf("%s ended otherwise than its first delivery: %s, then %s", what, outcomeText(first), outcomeText(got))}
		case first.Error == nil:
			if d := httpfixture.JSONDiff(first.Output, got.Output); d != "" {
				return []string{fmt.Sprintf("%s returned other output than its first delivery:\n%s", what, d)}
			}
		}
	}
	return nil
}

// deliverToOneInstance delivers order, in turn, to one instance at the
// fixtures' logical time, each delivery in a world of its own (Fresh):
// only the instance remembers the ones before. Result k is order[k]'s.
func (c *run) deliverToOneInstance(order []httpfixture.Fixture) (processRun, error) {
	world, err := c.newWorld(fixturetest.Now)
	if err != nil {
		return processRun{}, err
	}
	s := &recorder.Session{World: world, Mode: recorder.Provider, Fresh: true, Concurrency: 1}
	for k, fx := range order {
		p, err := c.fixturePlan(k, fx)
		if err != nil {
			return processRun{}, err
		}
		s.Deliveries = append(s.Deliveries, p)
	}
	return c.runSession(s, variants[0]), nil
}

// outcomeText says in a few words how a delivery ended.
func outcomeText(r wire.Result) string {
	if r.Error != nil {
		return "a " + r.Error.Kind + " error"
	}
	return "success"
}

// judgeFixture compares what fixture i did with what it records (its
// secret placeholders rewritten to the world's values, as its delivery's
// were).
func (c *run) judgeFixture(p processRun, i int, fx httpfixture.Fixture) []string {
	return c.judgeFixtureAs(p, i, substitute(fx, c.world.subs))
}

// judgeFixtureAs is judgeFixture for a fixture whose values are already
// the ones its delivery had.
func (c *run) judgeFixtureAs(p processRun, i int, fx httpfixture.Fixture) []string {
	var out []string
	res, ok := p.Results[i]
	if !ok {
		return []string{fmt.Sprintf("fixture %q: no result: %s", fx.Name, p.failure())}
	}
	for _, problem := range p.Problems[i] {
		out = append(out, fmt.Sprintf("fixture %q: %s", fx.Name, problem))
	}
	if n := p.Repeats[i]; n > 0 && c.spec.Retry != nil && c.spec.Retry.Owner != flowtype.RetryConnector {
		out = append(out, fmt.Sprintf("fixture %q: the connector repeated its last request %d time(s) by itself, but its spec makes the retry owner %s: retries must have one owner (declare retry.owner: connector, or stop retrying in Run)",
			fx.Name, n, c.spec.Retry.Owner))
	}
	switch {
	case fx.Error != nil && res.Error == nil:
		out = append(out, fmt.Sprintf("fixture %q: want a %s error, got success", fx.Name, fx.Error.Kind))
	case fx.Error != nil && res.Error.Kind != fx.Error.Kind:
		out = append(out, fmt.Sprintf("fixture %q: want a %s error, got %s: %s", fx.Name, fx.Error.Kind, res.Error.Kind, res.Error.Message))
	case fx.Error != nil && fx.Error.RetryAfter != "":
		want, err := time.ParseDuration(fx.Error.RetryAfter)
		if err != nil || res.Error.RetryAfter != want {
			out = append(out, fmt.Sprintf("fixture %q: want retry after %s, got %s", fx.Name, fx.Error.RetryAfter, res.Error.RetryAfter))
		}
	case fx.Error == nil && res.Error != nil:
		out = append(out, fmt.Sprintf("fixture %q: want output, got a %s error: %s", fx.Name, res.Error.Kind, res.Error.Message))
	case fx.Error == nil:
		if d := httpfixture.JSONDiff(fx.Output, res.Output); d != "" {
			out = append(out, fmt.Sprintf("fixture %q: output differs from the fixture:\n%s", fx.Name, d))
		}
	}
	return out
}

// replayRecord is what one fixture did in one process: the requests it
// sent, as the recorder saw them, and its result in the form the declared
// determinism promises to keep (exact bytes for Strict, canonical JSON
// for Stable, or the error's kind and message).
type replayRecord struct {
	requests []recorder.Request
	result   string
}

func (c *run) replayRecords(p processRun, world *recorder.World) map[int]replayRecord {
	out := map[int]replayRecord{}
	reqs := world.Requests()
	for i := range c.manifest.Fixtures {
		var r replayRecord
		for _, req := range reqs {
			if req.Delivery == i {
				r.requests = append(r.requests, req)
			}
		}
		res, ok := p.Results[i]
		switch {
		case !ok:
			r.result = "no result"
		case res.Error != nil:
			r.result = fmt.Sprintf("error %s %q", res.Error.Kind, res.Error.Message)
		case c.spec.Determinism == flowtype.Strict:
			r.result = "output " + string(res.Output)
		default:
			var v any
			out := res.Output
			if json.Unmarshal(out, &v) == nil {
				if canon, err := strictyaml.CanonicalJSON(v); err == nil {
					out = canon
				}
			}
			r.result = "canonical output " + string(out)
		}
		out[i] = r
	}
	return out
}

// hash is the replay hash of a record.
func (r replayRecord) hash() string {
	h := sha256.New()
	for _, req := range r.requests {
		fmt.Fprintf(h, "%s %s\n", req.Method, req.URL)
		for _, k := range slices.Sorted(maps.Keys(req.Header)) {
			fmt.Fprintf(h, "%s: %q\n", k, req.Header[k])
		}
		fmt.Fprintf(h, "%d\n", len(req.Body))
		h.Write(req.Body)
	}
	fmt.Fprintf(h, "%d\n%s", len(r.result), r.result)
	return fmt.Sprintf("sha256:%x", h.Sum(nil))
}

// diff says where two records of one fixture part.
func (r replayRecord) diff(o replayRecord) string {
	if len(r.requests) != len(o.requests) {
		return fmt.Sprintf("sent %d requests in one run and %d in the other", len(r.requests), len(o.requests))
	}
	for i := range r.requests {
		a, b := r.requests[i], o.requests[i]
		switch {
		case a.Method != b.Method || a.URL != b.URL:
			return fmt.Sprintf("request %d: %s %s, then %s %s", i+1, a.Method, a.URL, b.Method, b.URL)
		case !reflect.DeepEqual(a.Header, b.Header):
			for _, k := range slices.Sorted(maps.Keys(mergeKeys(a.Header, b.Header))) {
				if !slices.Equal(a.Header[k], b.Header[k]) {
					return fmt.Sprintf("request %d: header %s was %q, then %q", i+1, k, a.Header[k], b.Header[k])
				}
			}
		case !bytes.Equal(a.Body, b.Body):
			return fmt.Sprintf("request %d: the body changed: %.120q, then %.120q", i+1, a.Body, b.Body)
		}
	}
	ra, rb := r.result, o.result
	for _, prefix := range []string{"output ", "canonical output "} {
		if xa, ok := strings.CutPrefix(ra, prefix); ok {
			if xb, ok := strings.CutPrefix(rb, prefix); ok {
				var va, vb any
				if json.Unmarshal([]byte(xa), &va) == nil && json.Unmarshal([]byte(xb), &vb) == nil {
					if p := firstDifference(va, vb, ""); p != "" {
						return "output " + p
					}
				}
				return fmt.Sprintf("output bytes differ: %.120q, then %.120q", xa, xb)
			}
		}
	}
	return fmt.Sprintf("result %.120q, then %.120q", ra, rb)
}

func mergeKeys[V any](a, b map[string]V) map[string]bool {
	out := map[string]bool{}
	for k := range a {
		out[k] = true
	}
	for k := range b {
		out[k] = true
	}
	return out
}

// firstDifference names the first JSON Pointer where a and b differ, with
// both values; "" when they are equal.
func firstDifference(a, b any, ptr string) string {
	switch x := a.(type) {
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok {
			break
		}
		for _, k := range slices.Sorted(maps.Keys(mergeKeys(x, y))) {
			if d := firstDifference(x[k], y[k], ptr+"/"+k); d != "" {
				return d
			}
		}
		return ""
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			break
		}
		for i := range x {
			if d := firstDifference(x[i], y[i], ptr+"/"+strconv.Itoa(i)); d != "" {
				return d
			}
		}
		return ""
	}
	if reflect.DeepEqual(a, b) {
		return ""
	}
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	if ptr == "" {
		ptr = "/"
	}
	return fmt.Sprintf("%s was %.80s, then %.80s", ptr, ja, jb)
}

// determinism replays the fixtures in separate sandboxed processes that
// differ in host name, PID, environment and GOMAXPROCS, and compares each
// fixture's requests and result with the fixtures run.
func (c *run) determinism(ch *Check) {
	if c.spec.Determinism > flowtype.Stable {
		ch.Outcome, ch.Summary = Pass, fmt.Sprintf("not required: the connector declares %s", c.spec.Determinism)
		return
	}
	if c.fixtureWorld == nil {
		ch.Outcome, ch.Summary = Fail, "the fixtures did not run"
		return
	}
	base := c.replayRecords(c.fixtureRun, c.fixtureWorld)
	var diverged []string
	// A run with no result proves nothing: runs that all fail alike are
	// not the same behaviour.
	unfinished := func(run string, p processRun, records map[int]replayRecord) {
		for i, fx := range c.manifest.Fixtures {
			if records[i].result == "no result" {
				diverged = append(diverged, fmt.Sprintf("fixture %q, run %s: no result: %s", fx.Name, run, p.failure()))
			}
		}
	}
	unfinished(variants[0].name, c.fixtureRun, base)
	for _, v := range variants[1:] {
		_, world, p, err := c.fixtureSession(v)
		if err != nil {
			ch.Outcome, ch.Summary = Fail, err.Error()
			return
		}
		other := c.replayRecords(p, world)
		unfinished(v.name, p, other)
		for i, fx := range c.manifest.Fixtures {
			if a, b := base[i], other[i]; a.hash() != b.hash() {
				diverged = append(diverged, fmt.Sprintf("fixture %q, run %s against run %s (%s): %s", fx.Name, variants[0].name, v.name, describe(v), a.diff(b)))
			}
		}
	}
	what := "byte-identical"
	if c.spec.Determinism != flowtype.Strict {
		what = "canonically equal"
	}
	diverged = append(diverged, c.orderIndependence()...)
	if len(diverged) > 0 {
		ch.Outcome, ch.Summary = Fail, "a fixture's requests or result changed between processes, or an input's with what its instance served before (want "+what+")"
		ch.Evidence = diverged
		return
	}
	combined := sha256.New()
	for i, fx := range c.manifest.Fixtures {
		h := base[i].hash()
		fmt.Fprintf(combined, "%s %s\n", fx.Name, h)
		ch.Evidence = append(ch.Evidence, fmt.Sprintf("fixture %q: %s", fx.Name, h))
	}
	c.report.ReplayHash = fmt.Sprintf("sha256:%x", combined.Sum(nil))
	var runs []string
	for _, v := range variants {
		runs = append(runs, v.name+": "+describe(v))
	}
	ch.Evidence = append(ch.Evidence, "processes: "+strings.Join(runs, "; "),
		fmt.Sprintf("pins: clock fixed at %s; random sources seeded from each activation's key; HTTP answered from each fixture's recording; state fresh per fixture", fixturetest.Now.Format(time.RFC3339)))
	ch.Outcome, ch.Summary = Pass, fmt.Sprintf("%d fixtures %s across %d sandboxed processes; replay hash %s", len(c.manifest.Fixtures), what, len(variants), c.report.ReplayHash)
}

// orderIndependence delivers the success fixtures and the inputs
// generated from the schemas to one instance in one order, and to another
// in the reverse order, each delivery in a world of its own: each input
// must end alike in both, whatever the instance served before it. An
// output that carries what an earlier activation left (its input, a
// count) is state that outlives the activation, which a single fixture
// delivered again and again never shows.
func (c *run) orderIndependence() []string {
	var inputs []httpfixture.Fixture
	for _, fx := range c.manifest.Fixtures {
		if fx.Succeeds() {
			inputs = append(inputs, fx)
		}
	}
	for _, fx := range slices.Clone(inputs) {
		// The same input with its values drawn anew: what an earlier
		// activation leaves shows as a value of another input.
		if doc, err := decodeJSON(fx.Input); err == nil {
			if obj, ok := doc.(map[string]any); ok {
				if v, ok := c.fieldsVariant(fx, slices.Sorted(maps.Keys(obj)), "values drawn anew"); ok {
					inputs = append(inputs, v)
				}
			}
		}
	}
	for _, in := range c.generatedInputs() {
		inputs = append(inputs, in.fx)
	}
	if len(inputs) < 2 {
		return nil
	}
	forward, err := c.deliverToOneInstance(inputs)
	if err != nil {
		return []string{err.Error()}
	}
	reversed := slices.Clone(inputs)
	slices.Reverse(reversed)
	backward, err := c.deliverToOneInstance(reversed)
	if err != nil {
		return []string{err.Error()}
	}
	n := len(inputs)
	for i, fx := range inputs {
		a, okA := forward.Results[i]
		b, okB := backward.Results[n-1-i]
		what := fmt.Sprintf("input %q delivered %s of %d to one instance and %s to another", fx.Name, ordinal(i+1), n, ordinal(n-i))
		switch {
		case !okA || !okB:
			return []string{what + ": no result: " + forward.failure() + backward.failure()}
		case (a.Error == nil) != (b.Error == nil) || a.Error != nil && a.Error.Kind != b.Error.Kind:
			return []string{fmt.Sprintf("%s ended otherwise: %s, then %s (what the instance served before changes it: state that outlives the activation)", what, outcomeText(a), outcomeText(b))}
		case a.Error == nil:
			if d := httpfixture.JSONDiff(a.Output, b.Output); d != "" {
				return []string{fmt.Sprintf("%s returned other output (what the instance served before changes it: state that outlives the activation):\n%s", what, d)}
			}
		}
	}
	return nil
}

// ordinal writes n as 1st, 2nd, 3rd, 4th...
func ordinal(n int) string {
	suffix := "th"
	if n%100 < 11 || n%100 > 13 {
		switch n % 10 {
		case 1:
			suffix = "st"
		case 2:
			suffix = "nd"
		case 3:
			suffix = "rd"
		}
	}
	return fmt.Sprint(n) + suffix
}

func describe(v variant) string {
	pid := "pid 2"
	if v.asPID1 {
		pid = "pid 1"
	}
	instances := "instances shared"
	switch {
	case v.freshInstances:
		instances = "a fresh instance per fixture"
	case v.warm:
		instances = "every fixture run once before, in the same instance"
	}
	return fmt.Sprintf("host %s, %s, env %s, %s", v.hostname, pid, strings.Join(v.env, " "), instances)
}
