package certify

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/flowgen-dev/flowgen/certify/recorder"
	"github.com/flowgen-dev/flowgen/flowtype"
	"github.com/flowgen-dev/flowgen/internal/httpfixture"
	"github.com/flowgen-dev/flowgen/runtime/engine"
	"github.com/flowgen-dev/flowgen/runtime/wasmabi"
)

// dupInput is one input the duplicate-delivery check delivers again and
// again: a success fixture, or a variant of one.
type dupInput struct {
	name string
	fx   httpfixture.Fixture
	key  string
	// want is what its first delivery returned, which every later one
	// must return.
	want json.RawMessage
	// generated: derived from the schemas (generatedInputs), so it may
	// fail (no recording answers it) or take no effect (a dry run);
	// when it succeeds, duplicates of it are judged like any other.
	generated bool
}

// duplicateInputs are the fixtures that expect an output and, for each, a
// variant whose key fields differ (with default params when the params
// schema accepts none), so that distinct keys must stay distinct effects.
func (c *run) duplicateInputs() ([]dupInput, []string, error) {
	var inputs []dupInput
	var notes []string
	defaultParams := c.validParams(nil)
	for _, fx := range c.manifest.Fixtures {
		if !fx.Succeeds() {
			continue
		}
		inputs = append(inputs, dupInput{name: "fixture " + fx.Name, fx: fx})
		v, ok := c.keyVariant(fx)
		if !ok {
			notes = append(notes, fmt.Sprintf("fixture %q: no key field can be changed into an input the schema accepts, so it has no variant with another key", fx.Name))
			continue
		}
		name := "fixture " + fx.Name + " with other key fields"
		if defaultParams && len(fx.Params) > 0 && string(fx.Params) != "{}" {
			v.Params = nil
			name += " and default params"
		}
		inputs = append(inputs, dupInput{name: name, fx: v})
	}
	// A key shared by two fixtures with different inputs is a
	// collision: production would take the second for a duplicate of
	// the first and lose its effect.
	seen := map[string]dupInput{}
	out := inputs[:0]
	var collisions []string
	for _, in := range inputs {
		key, err := c.key(in.fx.Input)
		if err != nil {
			return nil, nil, fmt.Errorf("%s: %w", in.name, err)
		}
		if first, ok := seen[key]; ok {
			if httpfixture.JSONDiff(first.fx.Input, in.fx.Input) != "" {
				collisions = append(collisions, fmt.Sprintf("%s and %s have different inputs but one key (%s): production would take the second for a duplicate of the first and lose its effect; add the fields that tell them apart to idempotency.key", first.name, in.name, short(key)))
			}
			continue
		}
		in.key = key
		seen[key] = in
		out = append(out, in)
	}
	if len(collisions) > 0 {
		return nil, nil, &collisionError{collisions}
	}
	for _, in := range c.generatedInputs() {
		key, err := c.key(in.fx.Input)
		if _, dup := seen[key]; err != nil || dup {
			continue
		}
		in.key = key
		seen[key] = in
		out = append(out, in)
	}
	return out, notes, nil
}

// collisionError lists fixtures that share a key.
type collisionError struct{ collisions []string }

func (e *collisionError) Error() string { return strings.Join(e.collisions, "\n") }

// validParams reports whether params (nil for none) validate against the
// params schema.
func (c *run) validParams(params json.RawMessage) bool {
	sch := c.spec.ParamsSchema()
	if sch == nil {
		return true
	}
	if len(params) == 0 {
		params = json.RawMessage("{}")
	}
	v, err := decodeJSON(params)
	return err == nil && sch.Validate(v) == nil
}

// laterTimes and laterHorizon: duplicate delivery also runs every input
// at laterTimes logical times drawn between 30 days and laterHorizon
// after the run's time, as production will.
const (
	laterTimes   = 3
	laterHorizon = 3 * 365 * 24 * time.Hour
)

// phase is a part of the duplicate schedule.
type phase struct {
	name string
	// clock is the world's clock during the phase (dedupe TTLs follow
	// it); every delivery's logical time stays the run's, as an
	// activation's does on every delivery.
	clock time.Time
	// burst: each input in its own process, copies delivered at once;
	// else every input once, in order, in one process.
	burst   bool
	attempt int
}

// duplicates delivers every input the way a misbehaving broker would and
// counts, in the recorder, the effects each idempotency key had.
//
// First each input is delivered once, in order, in a world of their own
// (the baseline): every key must take effect (an effectful call that
// changed nothing is a key that collides with another, or a connector
// that did not do its job), and at most the effects the spec declares
// per call (idempotency.effectsPerCall). Then, in another world:
// concurrent bursts of 2 to 6 copies, each input's burst a process of its
// own, the inputs in shuffled order; a late copy of each at half the TTL,
// a copy under a clock an hour behind, one a second before the TTL ends,
// in reordered sequences; then every attempt number the engine can
// deliver under the spec's retry policy (its attempts and the crashes it
// allows beyond them). Then, in a third world, each input whose
// provider's answer to its first effect is lost (a timeout after the
// provider acted), delivered again. Every key must end with exactly its
// baseline number of effects, and every delivery that succeeds must
// return what the first one returned. The inputs also go, in turn, to
// one instance for its whole life (wasmabi.InstanceActivations). A last
// copy after the TTL is reported, not failed.
func (c *run) duplicates(ch *Check) {
	if c.spec.Effects != flowtype.Effectful {
		ch.Outcome, ch.Summary = Pass, fmt.Sprintf("not required: the connector is %s", c.spec.Effects)
		return
	}
	inputs, notes, err := c.duplicateInputs()
	var collided *collisionError
	if errors.As(err, &collided) {
		ch.Outcome, ch.Summary, ch.Evidence = Fail, "two fixtures with different inputs share one idempotency key", collided.collisions
		return
	}
	if err != nil {
		ch.Outcome, ch.Summary = Fail, err.Error()
		return
	}
	if len(inputs) == 0 {
		ch.Outcome, ch.Summary = Fail, "no fixture expects an output: nothing to deliver"
		return
	}
	ttl := 24 * time.Hour
	if c.spec.Idempotency != nil && c.spec.Idempotency.TTL > 0 {
		ttl = c.spec.Idempotency.TTL.Std()
	}
	now, limit := c.world.Now, c.spec.Idempotency.MaxEffects()
	var failures []string

	// The baseline: one delivery each. One world for all inputs, in
	// order, as production sees them: a world per input would hide keys
	// that collide.
	base, err := c.dupWorld(now)
	if err != nil {
		ch.Outcome, ch.Summary = Fail, err.Error()
		return
	}
	s := c.dupSession(base, inputs, 1, 1, recorder.Provider, 0)
	p := c.runSession(s, variants[0])
	generated, unjudged := 0, 0
	for _, d := range s.Deliveries {
		i := slices.IndexFunc(inputs, func(in dupInput) bool { return in.key == d.Key })
		if res, ok := p.Results[d.ID]; ok && res.Error == nil {
			inputs[i].want = res.Output
		}
		if inputs[i].generated {
			generated++
		}
	}
	// A generated input that fails at once is not judged further: no
	// recording may answer it, or the provider would refuse it.
	inputs = slices.DeleteFunc(inputs, func(in dupInput) bool {
		drop := in.generated && in.want == nil
		if drop {
			unjudged++
		}
		return drop
	})
	failures = append(failures, c.judgeDeliveries(p, s, inputs, false)...)
	baseline := base.Effects()
	for _, in := range inputs {
		if !reported(p, s, in.key) {
			continue // judged above
		}
		switch n := baseline[in.key]; {
		case n == 0 && in.generated:
			// A dry run, a field that turns the effect off: allowed.
		case n == 0:
			failures = append(failures, fmt.Sprintf("%s (key %s): delivered once, it took no effect: an effectful call must change something for its key (a key that collides with another input's, or a switch that turns the effect off)", in.name, short(in.key)))
		case n > limit:
			failures = append(failures, fmt.Sprintf("%s (key %s): delivered once, it took %d effects, but the spec declares at most %d per call (idempotency.effectsPerCall)", in.name, short(in.key), n, limit))
		}
	}
	failures = append(failures, c.violations(base)...)

	// The storm.
	storm, err := c.dupWorld(now)
	if err != nil {
		ch.Outcome, ch.Summary = Fail, err.Error()
		return
	}
	rng := rand.New(rand.NewPCG(c.world.Seed, uint64(len(inputs))))
	order := slices.Clone(inputs)
	rng.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
	fixtureInputs := slices.DeleteFunc(slices.Clone(order), func(in dupInput) bool { return in.generated })
	phases := []phase{
		{name: "burst", clock: now, burst: true},
		{name: "late, at half the TTL", clock: now.Add(ttl / 2), attempt: 2},
		{name: "under a clock an hour behind", clock: now.Add(-time.Hour), attempt: 1},
		{name: "a second before the TTL ends", clock: now.Add(ttl - time.Second), attempt: 3},
	}
	deliveries := len(inputs)
	id := 10000
	for pi, ph := range phases {
		storm.SetNow(ph.clock)
		if ph.burst {
			for _, in := range fixtureInputs {
				copies := 2 + rng.IntN(5)
				s := c.dupSession(storm, []dupInput{in}, copies, 0, recorder.Provider, id)
				id += copies
				deliveries += copies
				p := c.runSession(s, variants[rng.IntN(len(variants))])
				failures = append(failures, c.judgeDeliveries(p, s, []dupInput{in}, true)...)
			}
			continue
		}
		seq := slices.Clone(order)
		if pi%2 == 1 {
			slices.Reverse(seq)
		}
		s := c.dupSession(storm, seq, 1, ph.attempt, recorder.Provider, id)
		id += len(seq)
		deliveries += len(seq)
		p := c.runSession(s, variants[pi%len(variants)])
		for _, f := range c.judgeDeliveries(p, s, seq, false) {
			failures = append(failures, ph.name+": "+f)
		}
	}
	// One instance's whole life, as varied as production's: the inputs in
	// turn and, between them, as many inputs with key fields drawn anew
	// as the life has room for, each delivered twice (attempts 1 and 2)
	// at a logical time of its own, to one instance until the host
	// retires it (wasmabi.InstanceActivations). A connector that counts
	// its activations, its keys or the times it saw, and drops its key
	// after some, is seen doing it: no key may take more effects than its
	// input's one delivery.
	storm.SetNow(now) // the life's deliveries are called at their own times
	s = &recorder.Session{World: storm, Mode: recorder.Provider, Concurrency: 1}
	lifeKeys := map[string]int{} // drawn keys → the effects their input's one delivery has
	for j := 0; len(s.Deliveries) < wasmabi.InstanceActivations; j++ {
		src := order[j%len(order)]
		fx, at := src.fx, now
		if j >= len(order) {
			if v, ok := c.keyVariant(src.fx); ok {
				fx, at = v, now.Add(time.Duration(j)*time.Minute)
				if key, err := c.key(fx.Input); err == nil && key != src.key {
					lifeKeys[key] = baseline[src.key]
				}
			}
		}
		for attempt := 1; attempt <= 2; attempt++ {
			if pl, err := c.plan(id, fx, attempt, at); err == nil {
				s.Deliveries = append(s.Deliveries, pl)
				id++
			}
		}
	}
	deliveries += len(s.Deliveries)
	p = c.runSession(s, variants[0])
	for _, f := range c.judgeDeliveries(p, s, order, false) {
		failures = append(failures, fmt.Sprintf("over one instance's %d activations: %s", wasmabi.InstanceActivations, f))
	}
	failures = append(failures, c.tokenCacheUsed(storm, s)...)
	lifeEffects, over := storm.Effects(), 0
	for _, key := range slices.Sorted(maps.Keys(lifeKeys)) {
		if got, want := lifeEffects[key], lifeKeys[key]; got > want {
			if over++; over == 1 {
				failures = append(failures, fmt.Sprintf("over one instance's %d activations, an input with key fields drawn anew (key %s) took %d effect(s) in two deliveries, but its input's one delivery has %d (a connector that counts what it served and drops its key after some)", wasmabi.InstanceActivations, short(key), got, want))
			}
		}
	}
	if over > 1 {
		failures = append(failures, fmt.Sprintf("over one instance's %d activations, %d of %d inputs with key fields drawn anew took more effects than one delivery", wasmabi.InstanceActivations, over, len(lifeKeys)))
	}
	// Every attempt number the engine may deliver, in order.
	storm.SetNow(now)
	budget := engine.DeliveryBudget(c.node.Retry)
	s = &recorder.Session{World: storm, Mode: recorder.Provider, Concurrency: 1}
	for _, in := range order {
		for a := 1; a <= budget; a++ {
			if pl, err := c.plan(id, in.fx, a, now); err == nil {
				s.Deliveries = append(s.Deliveries, pl)
				id++
			}
		}
	}
	deliveries += len(s.Deliveries)
	p = c.runSession(s, variants[0])
	for _, f := range c.judgeDeliveries(p, s, order, false) {
		failures = append(failures, fmt.Sprintf("attempts 1 to %d: %s", budget, f))
	}
	effects := storm.Effects()
	for _, in := range inputs {
		want, got := baseline[in.key], effects[in.key]
		ch.Evidence = append(ch.Evidence, fmt.Sprintf("%s (key %s): %d effect(s) delivered once, %d under duplicates", in.name, short(in.key), want, got))
		if got != want {
			failures = append(failures, fmt.Sprintf("%s (key %s): %d effect(s) under duplicate deliveries, but one delivery has %d", in.name, short(in.key), got, want))
		}
	}
	for _, v := range c.violations(storm) {
		if !slices.Contains(failures, v) {
			failures = append(failures, v)
		}
	}

	// Lost answers: the provider acts, the connector hears nothing, and
	// the broker delivers again; for the answer to each effect of a
	// delivery in turn (the capture after the authorization, too).
	positions := 1
	for _, in := range inputs {
		positions = max(positions, min(baseline[in.key], limit))
	}
	for k := 1; k <= positions; k++ {
		lostWorld, err := c.dupWorld(now)
		if err != nil {
			ch.Outcome, ch.Summary = Fail, err.Error()
			return
		}
		lost := &recorder.Session{World: lostWorld, Mode: recorder.Provider, Concurrency: 1, LoseEffect: k}
		again := &recorder.Session{World: lostWorld, Mode: recorder.Provider, Concurrency: 1}
		for _, in := range order {
			if pl, err := c.plan(id, in.fx, 1, now); err == nil {
				lost.Deliveries = append(lost.Deliveries, pl)
			}
			if pl, err := c.plan(id+1, in.fx, 2, now); err == nil {
				again.Deliveries = append(again.Deliveries, pl)
			}
			id += 2
		}
		deliveries += len(lost.Deliveries) + len(again.Deliveries)
		what := "the provider's answer to the first effect"
		if k > 1 {
			what = fmt.Sprintf("the provider's answer to effect %d of a delivery", k)
		}
		p = c.runSession(lost, variants[0])
		for _, d := range lost.Deliveries {
			if _, ok := p.Results[d.ID]; !ok {
				failures = append(failures, fmt.Sprintf("after losing %s: no result: %s", what, p.failure()))
				break
			}
		}
		// A connector that cannot tell whether the provider acted may
		// refuse for now (a retryable kind), as long as it does not act
		// again.
		p = c.runSession(again, variants[1])
		for _, f := range c.judgeDeliveries(p, again, order, true) {
			failures = append(failures, "delivered again after losing "+what+": "+f)
		}
		afterLoss := lostWorld.Effects()
		for _, in := range inputs {
			if want, got := baseline[in.key], afterLoss[in.key]; got > want {
				failures = append(failures, fmt.Sprintf("%s (key %s): %d effect(s) when %s was lost and the input delivered again, but one delivery has %d (a retry under a new key, or a write that does not carry the key)", in.name, short(in.key), got, what, want))
			}
		}
	}

	// Later in the artifact's life: a connector certified today runs for
	// years, and one that changes its keys or effects after a date it
	// holds (a date bomb) behaves for any world of the next 30 days. So
	// the inputs are delivered twice more at each of laterTimes logical
	// times drawn over laterHorizon, in increasing order, in a world and
	// an instance of their own (one process: a long-lived instance sees
	// its clock leap forward too); after the first date, each input with
	// its key fields drawn anew, so that every date's keys are its own.
	// No key may take more effects than its input's one delivery today.
	var later []time.Time
	for range laterTimes {
		later = append(later, now.Add(30*24*time.Hour+time.Duration(rng.Int64N(int64(laterHorizon-30*24*time.Hour)))).Truncate(time.Second))
	}
	slices.SortFunc(later, time.Time.Compare)
	laterWorld, err := c.dupWorld(later[0])
	if err != nil {
		ch.Outcome, ch.Summary = Fail, err.Error()
		return
	}
	s = &recorder.Session{World: laterWorld, Mode: recorder.Provider, Concurrency: 1}
	type laterKey struct {
		name string
		at   time.Time
		want int
	}
	laterKeys := map[string]laterKey{}
	var dates []string
	for bi, at := range later {
		for _, in := range order {
			fx, key := in.fx, in.key
			if bi > 0 {
				v, ok := c.keyVariant(in.fx)
				if !ok {
					continue
				}
				k, err := c.key(v.Input)
				if err != nil || k == in.key {
					continue
				}
				fx, key = v, k
			}
			laterKeys[key] = laterKey{name: in.name, at: at, want: baseline[in.key]}
			for attempt := 1; attempt <= 2; attempt++ {
				if pl, err := c.plan(id, fx, attempt, at); err == nil {
					s.Deliveries = append(s.Deliveries, pl)
					id++
				}
			}
		}
		dates = append(dates, at.Format(time.DateOnly))
	}
	deliveries += len(s.Deliveries)
	p = c.runSession(s, variants[0])
	for _, f := range c.judgeDeliveries(p, s, order, true) {
		failures = append(failures, "at later dates: "+f)
	}
	laterEffects := laterWorld.Effects()
	for _, key := range slices.Sorted(maps.Keys(laterKeys)) {
		lk := laterKeys[key]
		if got := laterEffects[key]; got > lk.want {
			failures = append(failures, fmt.Sprintf("%s (key %s), delivered twice at %s, %d days after the run's time: %d effect(s), but one delivery at the run's time has %d (a connector whose keys or effects change with the date)", lk.name, short(key), lk.at.Format(time.DateOnly), int(lk.at.Sub(now).Hours()/24), got, lk.want))
		}
	}
	for _, v := range c.violations(laterWorld) {
		if !slices.Contains(failures, v) {
			failures = append(failures, v)
		}
	}
	notes = append(notes, fmt.Sprintf("every input delivered twice more at %s (drawn over the next %d days), in an instance of its own", strings.Join(dates, ", "), int(laterHorizon.Hours()/24)))

	// After the TTL: reported only.
	storm.SetNow(now.Add(ttl + time.Second))
	s = c.dupSession(storm, order, 1, 1, recorder.Provider, id)
	c.runSession(s, variants[0])
	after := storm.Effects()
	repeated := 0
	for _, in := range inputs {
		if after[in.key] > effects[in.key] {
			repeated++
		}
	}
	ch.Evidence = append(ch.Evidence, notes...)
	ch.Evidence = append(ch.Evidence, fmt.Sprintf("%d inputs generated from the schemas (enum values, optional fields, bounds, defaults); %d failed at their first delivery and were not judged further", generated, unjudged))
	ch.Evidence = append(ch.Evidence, fmt.Sprintf("after the TTL (%s), %d of %d keys took effect again (allowed: the dedupe window is the TTL)", ttl, repeated, len(inputs)))
	if len(failures) > 0 {
		ch.Outcome, ch.Summary = Fail, "a key had more or fewer effects than one delivery, or a delivery failed"
		ch.Evidence = append(failures, ch.Evidence...)
		return
	}
	ch.Outcome, ch.Summary = Pass, fmt.Sprintf("%d deliveries of %d inputs, %d generated from the schemas (bursts, concurrent, late, skewed, attempts 1-%d, one instance's life, lost answers, later dates): every key kept the effects of one delivery", deliveries, len(inputs), generated-unjudged, budget)
}

// tokenCacheUsed judges a declared token cache over one instance's life:
// a token is cached once per token issued, no effect, so a connector
// that asks for a new token on most activations uses no cache, hammers
// the token endpoint, and could keep state beside each new token that no
// count sees.
func (c *run) tokenCacheUsed(w *recorder.World, s *recorder.Session) []string {
	if c.spec.Auth == nil || c.spec.Auth.TokenCache == "" {
		return nil
	}
	ids := map[int]bool{}
	for _, d := range s.Deliveries {
		ids[d.ID] = true
	}
	asked := map[int]bool{}
	for _, r := range w.Requests() {
		if r.Token && ids[r.Delivery] {
			asked[r.Delivery] = true
		}
	}
	if len(asked)*2 > len(s.Deliveries) {
		return []string{fmt.Sprintf("over one instance's %d activations, %d asked for a new token although the spec declares a token cache (auth.tokenCache): a cached token serves until it expires", len(s.Deliveries), len(asked))}
	}
	return nil
}

// dupWorld is a world of the duplicate schedule, which also reports as a
// violation a write whose dedupe value is not bound to the activation's
// key (carriesKey): duplicate delivery is the check that judges what a
// connector gives its provider to deduplicate on.
func (c *run) dupWorld(now time.Time) (*recorder.World, error) {
	w, err := c.newWorld(now)
	if err == nil {
		w.CarriesKey = c.carriesKey
	}
	return w, err
}

// dupSession plans inputs in a session of world: copies of each (with
// concurrency copies when more than one), attempt given or cycling 1..3
// when 0, from id on.
func (c *run) dupSession(world *recorder.World, inputs []dupInput, copies, attempt int, mode recorder.Mode, id int) *recorder.Session {
	s := &recorder.Session{World: world, Mode: mode, Concurrency: copies}
	for _, in := range inputs {
		for n := range copies {
			a := attempt
			if a == 0 {
				a = 1 + n%3
			}
			p, err := c.plan(id, in.fx, a, c.world.Now)
			if err != nil {
				continue // reported by duplicateInputs
			}
			s.Deliveries = append(s.Deliveries, p)
			id++
		}
	}
	return s
}

// reported says whether a delivery of key in s reported a result.
func reported(p processRun, s *recorder.Session, key string) bool {
	for _, d := range s.Deliveries {
		if _, ok := p.Results[d.ID]; ok && d.Key == key {
			return true
		}
	}
	return false
}

// judgeDeliveries checks each delivery of a session: it reported, and it
// succeeded with its first delivery's output (compared when the spec
// promises Stable determinism or better: a BestEffort connector may
// answer a redelivery otherwise, with the clock it reads, and the engine
// keeps the output it committed first), or, in a burst,
// failed with a retryable kind (a connector may refuse a concurrent
// duplicate for now; the broker delivers it again later).
func (c *run) judgeDeliveries(p processRun, s *recorder.Session, inputs []dupInput, burst bool) []string {
	var out []string
	for _, d := range s.Deliveries {
		i := slices.IndexFunc(inputs, func(in dupInput) bool { return in.key == d.Key })
		if i < 0 {
			continue // not judged (generatedInputs)
		}
		in := inputs[i]
		what := fmt.Sprintf("%s, attempt %d", in.name, d.Attempt)
		res, ok := p.Results[d.ID]
		switch {
		case !ok:
			out = append(out, fmt.Sprintf("%s: no result: %s", what, p.failure()))
			return out
		case res.Error != nil && burst && (res.Error.Kind == flowtype.Transient.String() || res.Error.Kind == flowtype.RateLimited.String()):
		case res.Error != nil:
			out = append(out, fmt.Sprintf("%s: failed with %s: %s", what, res.Error.Kind, res.Error.Message))
		case in.want != nil && c.spec.Determinism <= flowtype.Stable:
			if diff := httpfixture.JSONDiff(c.firstOutput(s.World, in, res.Output), res.Output); diff != "" {
				out = append(out, fmt.Sprintf("%s: output differs from the first delivery's:\n%s", what, diff))
			}
		}
		for _, problem := range p.Problems[d.ID] {
			out = append(out, what+": "+problem)
		}
	}
	return append(out, p.Protocol...)
}

// firstOutput is what in's first delivery in world returned: every
// later delivery of it there must return the same. The baseline's world
// has it already (in.want); in another world (a fresh provider and
// database) the first delivery's output is its own, since what a
// provider or a database assigns (an id, a sequence number) may differ
// from one world to the next while one world's answer never changes.
// The first output of in in world is out when there is none yet.
func (c *run) firstOutput(world *recorder.World, in dupInput, out json.RawMessage) json.RawMessage {
	if c.firstOutputs == nil {
		c.firstOutputs = map[*recorder.World]map[string]json.RawMessage{}
	}
	seen := c.firstOutputs[world]
	if seen == nil {
		seen = map[string]json.RawMessage{}
		c.firstOutputs[world] = seen
	}
	if first, ok := seen[in.key]; ok {
		return first
	}
	seen[in.key] = out
	return out
}

func short(key string) string {
	if len(key) > 12 {
		return key[:12] + "…"
	}
	return key
}
