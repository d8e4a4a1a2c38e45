package certify

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/flowgen-dev/flowgen/certify/recorder"
	"github.com/flowgen-dev/flowgen/certify/wire"
	"github.com/flowgen-dev/flowgen/connectorspec"
	"github.com/flowgen-dev/flowgen/internal/httpfixture"
	"github.com/flowgen-dev/flowgen/internal/leak"
	"github.com/flowgen-dev/flowgen/runtime"
	"github.com/flowgen-dev/flowgen/runtime/engine"
	"github.com/flowgen-dev/flowgen/testharness/fixturetest"
)

// deliveryTimeout bounds one delivery in the harness.
const deliveryTimeout = 30 * time.Second

// key computes the idempotency key of input from the spec, as an engine
// would for the node the run's world names: certification never asks
// the connector's code what its key is, and the connector cannot know
// the keys in advance.
func (c *run) key(input json.RawMessage) (string, error) {
	info := runtime.NodeInfo{ID: c.spec.ID, KeySchema: c.spec.KeySchema()}
	if c.spec.Idempotency != nil {
		info.KeyFields = c.spec.Idempotency.Key
	}
	return engine.IdempotencyKey(info, c.world.node, input)
}

// plan makes a delivery of fixture fx with the given id, attempt and
// logical time, its secrets the world's (the fixture's placeholders
// rewritten to them), its clock capability as production's would read.
func (c *run) plan(id int, fx httpfixture.Fixture, attempt int, now time.Time) (recorder.Planned, error) {
	return c.planWith(id, substitute(fx, c.world.timeSubs), attempt, now)
}

// planWith is plan without rewriting the fixture's times.
func (c *run) planWith(id int, fx httpfixture.Fixture, attempt int, now time.Time) (recorder.Planned, error) {
	key, err := c.key(fx.Input)
	if err != nil {
		return recorder.Planned{}, fmt.Errorf("fixture %q: %w", fx.Name, err)
	}
	fx = substitute(fx, c.world.subs)
	seed := c.deliverySeed(id)
	return recorder.Planned{
		Delivery: wire.Delivery{ID: id, Params: fx.Params, Input: fx.Input, Key: key, Attempt: attempt,
			Now: now, Clock: now.Add(c.waited(attempt, seed)), Seed: seed, Secrets: maps.Clone(c.world.secrets), Timeout: deliveryTimeout},
		Exchanges: fx.HTTP,
	}, nil
}

// deliverySeed is delivery id's seed, drawn from the world's: the same
// for a delivery run again.
func (c *run) deliverySeed(id int) uint64 { return c.world.Seed ^ uint64(id)*0x9e3779b97f4a7c15 }

// fixturePlan is plan for a fixture's one delivery at the time the
// author's fixture tests run at (fixturetest.Now), the clock capability
// pinned there: a fixture records its output at that instant, and what
// it derives from it (an expiry a day later, a weekday) only there.
func (c *run) fixturePlan(id int, fx httpfixture.Fixture) (recorder.Planned, error) {
	p, err := c.planWith(id, fx, 1, fixturetest.Now)
	p.Clock = time.Time{}
	return p, err
}

// waited is how long after its logical time production would call a
// delivery of attempt: the retry policy's backoff before each earlier
// attempt, and a queueing delay drawn from seed.
func (c *run) waited(attempt int, seed uint64) time.Duration {
	r := rand.New(rand.NewPCG(seed, seed^0x7761697465640a))
	d := time.Duration(float64(minQueueing) * math.Pow(float64(maxQueueing)/float64(minQueueing), r.Float64()))
	for a := 2; a <= attempt; a++ {
		d += c.node.Retry.Backoff(a)
	}
	return d
}

// The delay between an activation's publication and its call, when
// nothing failed: a worker's poll, a queue behind it.
const minQueueing, maxQueueing = 50 * time.Microsecond, 2 * time.Second

// substitution replaces one value of a fixture with another wherever the
// fixture's recording and output mention it, so that a provider answers
// an altered input as it answered the original.
type substitution struct {
	old, new string
	// number: old and new are integers, replaced only as whole numbers.
	number bool
}

func (s substitution) apply(text string) string {
	if !s.number {
		text = strings.ReplaceAll(text, s.old, s.new)
		if q, nq := url.QueryEscape(s.old), url.QueryEscape(s.new); q != s.old {
			text = strings.ReplaceAll(text, q, nq)
		}
		if p, np := url.PathEscape(s.old), url.PathEscape(s.new); p != s.old {
			text = strings.ReplaceAll(text, p, np)
		}
		return text
	}
	var b strings.Builder
	numeric := func(r byte) bool { return r >= '0' && r <= '9' || r == '.' }
	for i := 0; i < len(text); {
		j := strings.Index(text[i:], s.old)
		if j < 0 {
			b.WriteString(text[i:])
			break
		}
		at := i + j
		end := at + len(s.old)
		whole := (at == 0 || !numeric(text[at-1])) && (end == len(text) || !numeric(text[end]))
		b.WriteString(text[i:at])
		if whole {
			b.WriteString(s.new)
		} else {
			b.WriteString(s.old)
		}
		i = end
	}
	return b.String()
}

// substitute returns fx with every substitution applied to its input,
// output, recorded requests and responses.
func substitute(fx httpfixture.Fixture, subs []substitution) httpfixture.Fixture {
	text := func(s string) string {
		for _, sub := range subs {
			s = sub.apply(s)
		}
		return s
	}
	raw := func(r json.RawMessage) json.RawMessage {
		if len(r) == 0 {
			return r
		}
		return json.RawMessage(text(string(r)))
	}
	out := fx
	out.Input, out.Output = raw(fx.Input), raw(fx.Output)
	out.HTTP = make([]httpfixture.Exchange, len(fx.HTTP))
	for i, ex := range fx.HTTP {
		ex.Request.URL = text(ex.Request.URL)
		ex.Request.Headers = mapText(ex.Request.Headers, text)
		ex.Request.Body = raw(ex.Request.Body)
		ex.Response.Headers = mapText(ex.Response.Headers, text)
		ex.Response.Body = raw(ex.Response.Body)
		out.HTTP[i] = ex
	}
	return out
}

func mapText(m map[string]string, f func(string) string) map[string]string {
	if m == nil {
		return nil
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = f(v)
	}
	return out
}

// keyVariant returns fx with every key field changed, so that it has an
// idempotency key of its own, its recording rewritten to match; ok is
// false when no key field can be changed into an input the schema accepts.
func (c *run) keyVariant(fx httpfixture.Fixture) (httpfixture.Fixture, bool) {
	if c.spec.Idempotency == nil || len(c.spec.Idempotency.Key) == 0 {
		return fx, false
	}
	return c.fieldsVariant(fx, c.spec.Idempotency.Key, "key fields changed")
}

// fieldsVariant returns fx with the string and integer values of fields
// (dotted paths) drawn anew, its recording rewritten to match, named for
// what changed; ok is false when none can be changed into an input the
// schema accepts.
func (c *run) fieldsVariant(fx httpfixture.Fixture, fields []string, changed string) (httpfixture.Fixture, bool) {
	// Drawn values, grown to be unmistakable, then in the original's
	// length (for patterns and maximum lengths), then the last character
	// bumped. Each field on its own: one the schema holds to its value
	// (an enum, a const) keeps it, and the others still change.
	for attempt := 0; attempt < 3; attempt++ {
		in, err := decodeJSON(fx.Input)
		if err != nil {
			return fx, false
		}
		obj, ok := in.(map[string]any)
		if !ok {
			return fx, false
		}
		var subs []substitution
		for _, field := range fields {
			v, ok := lookup(obj, field)
			if !ok {
				continue
			}
			var sub substitution
			switch x := v.(type) {
			case string:
				nv := c.world.unused(x, attempt == 0)
				if attempt == 2 || nv == x {
					nv = bumpLast(x)
				}
				if nv == x || x == "" {
					continue
				}
				setPath(obj, field, nv)
				sub = substitution{old: x, new: nv}
			case json.Number:
				n, err := x.Int64()
				if err != nil {
					continue
				}
				nv := strconv.FormatInt(n+1+int64(c.world.uintn(1<<20)), 10)
				if attempt == 2 {
					nv = strconv.FormatInt(n+1, 10)
				}
				setPath(obj, field, json.Number(nv))
				sub = substitution{old: x.String(), new: nv, number: true}
			default:
				continue
			}
			if b, err := json.Marshal(obj); err != nil || !c.validInput(b) {
				setPath(obj, field, v) // the schema holds this one
				continue
			}
			subs = append(subs, sub)
		}
		if len(subs) == 0 {
			continue
		}
		variant := substitute(fx, subs)
		b, err := json.Marshal(obj)
		if err != nil {
			return fx, false
		}
		variant.Input = b
		variant.Name = fx.Name + " (" + changed + ")"
		if c.validInput(variant.Input) {
			return variant, true
		}
	}
	return fx, false
}

// bumpLast changes the last letter or digit of s into the next one of its
// kind, keeping the length (for fields with a pattern or a maximum length).
func bumpLast(s string) string {
	b := []byte(s)
	for i := len(b) - 1; i >= 0; i-- {
		if next, ok := nextOfKind(b[i]); ok {
			b[i] = next
			return string(b)
		}
	}
	return s
}

// nextOfKind is the letter or digit after ch, wrapping within its kind
// (z to a, 9 to 0); ok is false for anything else.
func nextOfKind(ch byte) (next byte, ok bool) {
	switch {
	case ch >= '0' && ch <= '9':
		return '0' + (ch-'0'+1)%10, true
	case ch >= 'a' && ch <= 'z':
		return 'a' + (ch-'a'+1)%26, true
	case ch >= 'A' && ch <= 'Z':
		return 'A' + (ch-'A'+1)%26, true
	}
	return ch, false
}

// validInput reports whether input validates against the primary input
// port's schema.
func (c *run) validInput(input json.RawMessage) bool {
	sch := c.spec.InputSchema(c.spec.PrimaryInputPort())
	if sch == nil {
		return true
	}
	v, err := decodeJSON(input)
	if err != nil {
		return false
	}
	return sch.Validate(toSchemaValue(v)) == nil
}

// toSchemaValue converts json.Number leaves for the schema validator,
// which takes float64 or json.Number alike; kept as one place to adapt.
func toSchemaValue(v any) any { return v }

func decodeJSON(b []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	return v, nil
}

// lookup resolves a dotted field path in a decoded object.
func lookup(obj map[string]any, path string) (any, bool) {
	var cur any = obj
	for seg := range strings.SplitSeq(path, ".") {
		m, ok := cur.(map[string]any)
		if !ok {
			return nil, false
		}
		if cur, ok = m[seg]; !ok {
			return nil, false
		}
	}
	return cur, true
}

// canary is a value certification draws for a classified input field or
// a secret, to find where the connector lets it go.
type canary struct {
	value  string
	class  string // the input field's data class, or "secret"
	origin string // the field's JSON Pointer, or the secret handle
	look   leak.Value
	number bool // a JSON number, replaced only as a whole number
}

// canaryParts is how many consecutive characters of a secret count as
// the secret: every character of it is drawn.
const canaryParts = 12

// secretCanaries are the world's secret values, sorted by handle.
func (c *run) secretCanaries() []canary {
	c.world.secretsOnce.Do(func() {
		for _, s := range c.spec.Secrets {
			v := c.world.secrets[s.Handle]
			c.world.secretLooks = append(c.world.secretLooks, canary{value: v, class: "secret", origin: s.Handle, look: leak.NewValue(v).WithParts(canaryParts)})
		}
	})
	return c.world.secretLooks
}

// canaryVariant returns fx with every leaf of its input whose class ranks
// confidential or above redrawn (a string in its own shape, an integer
// of leak.MinLength digits or more with as many digits), its recording and output rewritten to match, and
// the canaries placed. Values that would no longer validate are kept.
func (c *run) canaryVariant(fx httpfixture.Fixture) (httpfixture.Fixture, []canary) {
	in, err := decodeJSON(fx.Input)
	if err != nil {
		return fx, nil
	}
	sch := c.spec.InputSchema(c.spec.PrimaryInputPort())
	var subs []substitution
	var canaries []canary
	connectorspec.WalkClasses(sch, in, func(ptr, class string, leaf any) {
		if connectorspec.ClassRank(class) < connectorspec.ClassRank("confidential") {
			return
		}
		var sub substitution
		switch x := leaf.(type) {
		case string:
			if x == "" {
				return
			}
			sub = substitution{old: x, new: c.world.likeInFormat(x, true)}
		case json.Number:
			digits := strings.TrimPrefix(x.String(), "-")
			if _, err := strconv.ParseUint(digits, 10, 64); err != nil || len(digits) < leak.MinLength {
				return // too short to tell from any other number
			}
			sub = substitution{old: x.String(), new: strings.TrimSuffix(x.String(), digits) + c.world.digits(len(digits)), number: true}
		default:
			return
		}
		if slices.ContainsFunc(subs, func(s substitution) bool { return s.old == sub.old }) {
			return
		}
		subs = append(subs, sub)
		canaries = append(canaries, canary{value: sub.new, class: class, origin: ptr, look: leak.NewValue(sub.new), number: sub.number})
	})
	if len(subs) == 0 {
		return fx, nil
	}
	v := substitute(fx, subs)
	if !c.validInput(v.Input) {
		// A drawn value broke a pattern or a bound: draw again without
		// growing the strings.
		for i := range subs {
			if !subs[i].number {
				subs[i].new = c.world.likeInFormat(subs[i].old, false)
				canaries[i].value, canaries[i].look = subs[i].new, leak.NewValue(subs[i].new)
			}
		}
		if v = substitute(fx, subs); !c.validInput(v.Input) {
			return fx, nil
		}
	}
	v.Name = fx.Name + " (canaries)"
	return v, canaries
}
