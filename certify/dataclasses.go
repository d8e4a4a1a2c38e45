package certify

import (
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/flowgen-dev/flowgen/certify/recorder"
	"github.com/flowgen-dev/flowgen/certify/wire"
	"github.com/flowgen-dev/flowgen/connectorspec"
	"github.com/flowgen-dev/flowgen/flowtype"
	"github.com/flowgen-dev/flowgen/internal/httpfixture"
)

// dataClasses runs every fixture, error paths included, in the run's
// drawn world: secrets drawn in their provider's shape, every input field
// classified confidential or above redrawn in its own shape (canaries),
// keys computed under a drawn node name, the clock at a drawn instant.
// It fails when a canary comes out where its class may not go, in any of
// the forms package leak knows (as it is, case-folded, URL-, hex- or
// base64-encoded, digested; any 12 characters of a secret): an output
// field of a weaker class (a secret: any output), an error message
// (errors reach job state and logs), the process's output however long
// (logs), a request to a host outside the egress allowlist, or a secret
// in a request to a host the spec does not send it to. And it fails when
// a fixture ends otherwise than it records (another error kind, an error
// for a success): a connector that behaves only in the world its author
// recorded would behave otherwise in production. The fixtures run again
// with every request refused or failing (secretFlow's twin for the paths
// no fixture records), once per secret and once per classified input
// field with one character of its value changed (secretFlow, classFlow);
// every fixture also runs at a later attempt where the retry policy
// redelivers.
func (c *run) dataClasses(ch *Check) {
	world, err := c.newWorld(c.world.Now)
	if err != nil {
		ch.Outcome, ch.Summary = Fail, err.Error()
		return
	}
	s := &recorder.Session{World: world, Mode: recorder.Provider, Fresh: true, Concurrency: 1}
	var canaries []canary
	fixtures := map[int]httpfixture.Fixture{}
	// Each fixture at attempt 1 and, where the retry policy redelivers,
	// at a later attempt drawn from it: a connector that lets a value out
	// only on a retry is seen doing it.
	redelivers := c.node.Retry.MaxAttempts
	for i, fx := range c.manifest.Fixtures {
		v, cs := c.canaryVariant(fx)
		p, err := c.plan(i, v, 1, c.world.Now)
		if err != nil {
			continue
		}
		s.Deliveries = append(s.Deliveries, p)
		fixtures[i] = fx
		canaries = append(canaries, cs...)
		if redelivers > 1 {
			later := laterAttempt + i
			if p, err := c.plan(later, v, 2+int(c.world.uintn(uint64(redelivers-1))), c.world.Now); err == nil {
				s.Deliveries = append(s.Deliveries, p)
				fixtures[later] = fx
			}
		}
	}
	if len(s.Deliveries) == 0 {
		ch.Outcome, ch.Summary = Warn, "no fixture could be delivered, so no canary was traced"
		return
	}
	p := c.runSession(s, variants[0], canaries...)
	all := append(c.secretCanaries(), canaries...)
	var leaks []string
	outSchema := c.spec.OutputSchema(c.spec.PrimaryOutputPort())
	for _, d := range s.Deliveries {
		fx := fixtures[d.ID]
		res, ok := p.Results[d.ID]
		switch {
		case !ok:
			leaks = append(leaks, fmt.Sprintf("fixture %q with canaries: no result: %s", fx.Name, p.failure()))
			continue
		case res.Error != nil:
			leaks = append(leaks, errorLeaks(fmt.Sprintf("fixture %q", fx.Name), res.Error.Message, all)...)
		}
		if problem := otherOutcome(fx, res.Error); problem != "" {
			leaks = append(leaks, fmt.Sprintf("fixture %q, run with drawn secrets, keys, clock and canaries: %s", fx.Name, problem))
		}
		if res.Error != nil {
			continue
		}
		out, err := decodeJSON(res.Output)
		if err != nil {
			continue
		}
		connectorspec.WalkClasses(outSchema, out, func(ptr, class string, leaf any) {
			var text string
			switch x := leaf.(type) {
			case string:
				text = x
			case json.Number:
				text = x.String()
			default:
				return
			}
			for _, cn := range all {
				form := cn.look.Find(text)
				if form == "" && text != cn.value {
					continue
				}
				switch {
				case cn.class == "secret":
					leaks = append(leaks, fmt.Sprintf("fixture %q: the value of secret %s appears in output %s", fx.Name, cn.origin, ptr))
				case connectorspec.ClassRank(class) < connectorspec.ClassRank(cn.class):
					shown := class
					if shown == "" {
						shown = "unclassified"
					}
					leaks = append(leaks, fmt.Sprintf("fixture %q: a %s value from input %s appears in output %s, classified %s", fx.Name, cn.class, cn.origin, ptr, shown))
				}
			}
		})
	}
	for i, where := range p.Logged {
		if where != "" {
			leaks = append(leaks, secretLogged(all[i], where))
		}
	}
	leaks = append(leaks, c.requestLeaks(world, all)...)
	leaks = append(leaks, c.secretFlow(s, p, canaries, fixtures)...)
	leaks = append(leaks, c.classFlow(s, p, canaries, fixtures)...)
	// The paths no fixture records: every request answered as a provider
	// refuses or fails (401, 403, 429, 503, a timeout). What the connector
	// does then, in its errors, logs and requests, must not leak either.
	rs := &recorder.Session{World: world, Mode: recorder.Provider, Fresh: true, Concurrency: 1}
	refusals := []int{http.StatusUnauthorized, http.StatusForbidden, http.StatusTooManyRequests, http.StatusServiceUnavailable, recorder.RefuseTimeout}
	for i, refusal := range refusals {
		for _, d := range s.Deliveries {
			d.ID += (i + 1) * 100000
			d.Refuse = refusal
			rs.Deliveries = append(rs.Deliveries, d)
		}
	}
	rp := c.runSession(rs, variants[0], canaries...)
	for _, d := range rs.Deliveries {
		res, ok := rp.Results[d.ID]
		if !ok || res.Error == nil {
			continue
		}
		what := fmt.Sprintf("answered %d", d.Refuse)
		if d.Refuse == recorder.RefuseTimeout {
			what = "never answered"
		}
		leaks = append(leaks, errorLeaks(fmt.Sprintf("fixture %q, every request %s", fixtures[d.ID%100000].Name, what), res.Error.Message, all)...)
	}
	for i, where := range rp.Logged {
		if where != "" {
			leaks = append(leaks, "with every request refused or failing: "+secretLogged(all[i], where))
		}
	}
	leaks = append(leaks, c.requestLeaks(world, all)...)
	// Secrets are the same in every run: what any other check's runs
	// showed of one counts too (an error on the fourth attempt, a log
	// line in a burst, a request in the storm).
	secrets := c.secretCanaries()
	for _, w := range c.worlds {
		if w != world {
			leaks = append(leaks, c.requestLeaks(w, secrets)...)
		}
	}
	c.leaksMu.Lock()
	leaks = append(leaks, c.secretLeaks...)
	c.leaksMu.Unlock()
	leaks = append(leaks, p.Protocol...)
	slices.Sort(leaks)
	leaks = slices.Compact(leaks)
	ch.Evidence = leaks
	if len(leaks) > 0 {
		ch.Outcome, ch.Summary = Fail, "a classified or secret value reaches a weaker output, an error, the logs or a host it may not, or a fixture ends otherwise in a drawn world"
		return
	}
	traced := 0
	for id := range fixtures {
		if id < laterAttempt {
			traced++
		}
	}
	attempts := "at attempt 1"
	if redelivers > 1 {
		attempts = "at attempt 1 and a later one"
	}
	ch.Outcome, ch.Summary = Pass, fmt.Sprintf("%d canaries (classified input fields and secrets) through %d fixtures %s in a drawn world: none reached a weaker output, an error, the logs or another host", len(all), traced, attempts)
}

// otherOutcome says how a result differs in kind from what fixture fx
// records: an error for a success, a success for an error, another
// error kind; "" when it ends as recorded.
func otherOutcome(fx httpfixture.Fixture, got *wire.Error) string {
	switch {
	case fx.Error == nil && got != nil && len(fx.Output) > 0:
		return fmt.Sprintf("want output, got a %s error: %s", got.Kind, got.Message)
	case fx.Error != nil && got == nil:
		return fmt.Sprintf("want a %s error, got success", fx.Error.Kind)
	case fx.Error != nil && got.Kind != fx.Error.Kind:
		return fmt.Sprintf("want a %s error, got %s: %s", fx.Error.Kind, got.Kind, got.Message)
	}
	return ""
}

// requestLeaks finds canaries in the requests the world saw: any canary
// sent to a host outside the egress allowlist, and a secret sent to a
// host the spec does not send it to.
func (c *run) requestLeaks(world *recorder.World, all []canary) []string {
	var out []string
	hosts := map[string][]string{}
	for _, s := range c.spec.Secrets {
		hosts[s.Handle] = c.spec.SecretHosts(s)
	}
	for _, req := range world.Requests() {
		text := req.Method + " " + req.URL + "\n" + fmt.Sprint(req.Header) + "\n" + string(req.Body)
		for _, cn := range all {
			form := cn.look.Find(text)
			if form == "" {
				continue
			}
			switch {
			case !c.allowed(req.Host):
				out = append(out, fmt.Sprintf("the %s value from %s was sent (%s) to %s, which is not in the egress allowlist", cn.class, originName(cn), form, req.Host))
			case cn.class == "secret" && !flowtype.EgressAllows(hosts[cn.origin], req.Host):
				out = append(out, fmt.Sprintf("the value of secret %s was sent (%s) to %s, but the spec sends it only to %v", cn.origin, form, req.Host, hosts[cn.origin]))
			}
		}
	}
	return out
}

// errorLeaks names each canary that an error message, which reaches job
// state and logs, carries; where says which run it came from.
func errorLeaks(where, message string, all []canary) []string {
	var out []string
	for _, cn := range all {
		if form := cn.look.Find(message); form != "" {
			out = append(out, fmt.Sprintf("%s: the %s value from %s appears in the error message (%s), which reaches job state and logs", where, cn.class, originName(cn), form))
		}
	}
	return out
}

func originName(cn canary) string {
	if cn.class == "secret" {
		return "secret " + cn.origin
	}
	return "input " + cn.origin
}

// secretFlow runs the session's deliveries again, once per secret, with
// one character of that secret's value changed, and compares everything
// the connector lets out: whatever changes by about as little (near)
// carries the value in some form (reversed, split, every other
// character), so it may change only the requests to the hosts the spec
// sends the secret to. What changes wholly (a signature made with the
// secret, a digest) does not carry it.
func (c *run) secretFlow(s *recorder.Session, p processRun, canaries []canary, fixtures map[int]httpfixture.Fixture) []string {
	var out []string
	outSchema := c.spec.OutputSchema(c.spec.PrimaryOutputPort())
	for _, sec := range c.spec.Secrets {
		other := oneOff(c.world.secrets[sec.Handle])
		sub := []substitution{{old: c.world.secrets[sec.Handle], new: other}}
		world, err := c.newWorld(c.world.Now)
		if err != nil {
			return append(out, err.Error())
		}
		again := &recorder.Session{World: world, Mode: s.Mode, Fresh: s.Fresh, Concurrency: 1}
		for _, d := range s.Deliveries {
			d.Secrets = maps.Clone(d.Secrets)
			d.Secrets[sec.Handle] = other
			d.Exchanges = substitute(httpfixture.Fixture{HTTP: d.Exchanges}, sub).HTTP
			again.Deliveries = append(again.Deliveries, d)
		}
		q := c.runSession(again, variants[0], canaries...)
		hosts := c.spec.SecretHosts(sec)
		where := func(what string) string {
			return fmt.Sprintf("the value of secret %s changes %s: the secret flows there, in some form", sec.Handle, what)
		}
		for _, d := range s.Deliveries {
			a, b := p.Results[d.ID], q.Results[d.ID]
			switch {
			case (a.Error == nil) != (b.Error == nil) || a.Error != nil && near(a.Error.Message, b.Error.Message):
				out = append(out, where(fmt.Sprintf("the outcome or error message of fixture %q", fixtures[d.ID].Name)))
			case len(weakerChanges(outSchema, a.Output, b.Output, math.MaxInt)) > 0:
				out = append(out, where(fmt.Sprintf("the output of fixture %q", fixtures[d.ID].Name)))
			}
		}
		if linesNear(p.Stdout, q.Stdout) || linesNear(p.Stderr, q.Stderr) {
			out = append(out, where("what the connector writes to its logs"))
		}
		if linesNear(strings.Join(elsewhere(c.worldRequests(s.World, s), hosts), "\n"), strings.Join(elsewhere(c.worldRequests(world, again), hosts), "\n")) {
			out = append(out, where(fmt.Sprintf("requests to hosts other than %v", hosts)))
		}
	}
	return out
}

// laterAttempt numbers the data-classes deliveries at a later attempt
// (laterAttempt + the fixture's index), below the refusal runs' offsets.
const laterAttempt = 50000

// maxClassFlows bounds the classified input fields classFlow varies,
// one run each.
const maxClassFlows = 8

// classFlow runs the session's deliveries again, once per classified
// input field (up to maxClassFlows), with one character of that field's
// canaries changed, and compares what may not carry the value: output
// fields classified below it, error messages and logs. What changes by
// a character or two carries the value in a form that keeps it (reversed,
// shifted, every other character, a stream cipher), which no search for
// the value finds. What changes wholly (a digest of a document that holds
// the value, an ETag) does not keep it, and the canaries' search already
// looks for the value's own digests. Requests are not compared: a
// classified value goes to the provider by design.
func (c *run) classFlow(s *recorder.Session, p processRun, canaries []canary, fixtures map[int]httpfixture.Fixture) []string {
	var origins []string
	class := map[string]string{}
	for _, cn := range canaries {
		if _, ok := class[cn.origin]; !ok && len(origins) < maxClassFlows {
			origins = append(origins, cn.origin)
			class[cn.origin] = cn.class
		}
	}
	outSchema := c.spec.OutputSchema(c.spec.PrimaryOutputPort())
	var out []string
	for _, origin := range origins {
		var subs []substitution
		for _, cn := range canaries {
			if cn.origin == origin {
				subs = append(subs, substitution{old: cn.value, new: oneOff(cn.value), number: cn.number})
			}
		}
		world, err := c.newWorld(c.world.Now)
		if err != nil {
			return append(out, err.Error())
		}
		again := &recorder.Session{World: world, Mode: s.Mode, Fresh: s.Fresh, Concurrency: 1}
		valid := true
		for _, d := range s.Deliveries {
			fx := substitute(httpfixture.Fixture{Input: d.Input, HTTP: d.Exchanges}, subs)
			valid = valid && c.validInput(fx.Input)
			d.Input, d.Exchanges = fx.Input, fx.HTTP
			again.Deliveries = append(again.Deliveries, d)
		}
		if !valid {
			continue // a changed character the schema refuses
		}
		q := c.runSession(again, variants[0], canaries...)
		where := func(what string) string {
			return fmt.Sprintf("the %s value of input %s changes %s by as little as it changed: the value flows there, in some form", class[origin], origin, what)
		}
		for _, d := range s.Deliveries {
			a, b := p.Results[d.ID], q.Results[d.ID]
			switch {
			case (a.Error == nil) != (b.Error == nil):
				out = append(out, where(fmt.Sprintf("the outcome of fixture %q", fixtures[d.ID].Name)))
				continue
			case a.Error != nil && near(a.Error.Message, b.Error.Message):
				out = append(out, where(fmt.Sprintf("the error message of fixture %q", fixtures[d.ID].Name)))
				continue
			}
			for _, ptr := range weakerChanges(outSchema, a.Output, b.Output, connectorspec.ClassRank(class[origin])) {
				out = append(out, where(fmt.Sprintf("output %s of fixture %q, classified below it,", ptr, fixtures[d.ID].Name)))
			}
		}
		if linesNear(p.Stdout, q.Stdout) || linesNear(p.Stderr, q.Stderr) {
			out = append(out, where("what the connector writes to its logs"))
		}
	}
	return out
}

// oneOff is v with one letter or digit of its drawn part (what like
// redraws: after a URL's host, a token's prefix, before an address's
// domain) changed into the next of its kind, near the middle, keeping
// what makes it valid: hex stays hex, a card number its Luhn digit, an
// IBAN its check digits.
func oneOff(v string) string {
	from, to := drawnPart(v)
	hex := strings.Trim(v[from:to], "0123456789abcdef") == ""
	b := []byte(v)
	for i := from + (to-from)/2; i < to; i++ {
		next, ok := nextOfKind(b[i])
		if hex && b[i] == 'f' {
			next = 'a'
		}
		// A leading 9 would become 0 (a number would lose a digit).
		if ok && !(i == 0 && b[i] == '9') {
			b[i] = next
			out := string(b)
			switch {
			case luhnValid(v):
				out = out[:len(out)-1] + string(luhnDigit(out[:len(out)-1]))
			case ibanValid(v):
				out = out[:2] + ibanCheck(out[:2], out[4:]) + out[4:]
			}
			if out != v {
				return out
			}
		}
	}
	return bumpLast(v)
}

// drawnPart is where like draws in example: after a URL's scheme and
// host or a token's prefix, before an address's domain.
func drawnPart(example string) (from, to int) {
	to = len(example)
	if u, err := url.Parse(example); err == nil && u.Scheme != "" && u.Host != "" && strings.Contains(example, "://") {
		return strings.Index(example, "://") + 3 + len(u.Host), to
	}
	from = tokenPrefix(example)
	if at := strings.LastIndexByte(example, '@'); at > from {
		to = at
	}
	return from, to
}

// weakerChanges are the output leaves classified below rank that one
// output has and the other lacks, or whose values differ by little
// (near).
func weakerChanges(sch *jsonschema.Schema, a, b json.RawMessage, rank int) []string {
	leaves := func(raw json.RawMessage) map[string]string {
		m := map[string]string{}
		v, err := decodeJSON(raw)
		if err != nil {
			return m
		}
		connectorspec.WalkClasses(sch, v, func(ptr, class string, leaf any) {
			if connectorspec.ClassRank(class) < rank {
				m[ptr] = fmt.Sprint(leaf)
			}
		})
		return m
	}
	la, lb := leaves(a), leaves(b)
	var out []string
	for _, ptr := range slices.Sorted(maps.Keys(la)) {
		if vb, ok := lb[ptr]; !ok || near(la[ptr], vb) {
			out = append(out, ptr)
		}
	}
	for _, ptr := range slices.Sorted(maps.Keys(lb)) {
		if _, ok := la[ptr]; !ok {
			out = append(out, ptr)
		}
	}
	return out
}

// near reports whether a and b differ in one short stretch (nearSpan
// characters at most, once what they share at both ends is set aside):
// what a one-character change of a value makes of a form that keeps it
// (itself, reversed, shifted, encoded), where a digest or a signature
// changes wholly.
func near(a, b string) bool {
	if a == b {
		return false
	}
	if len(a) == len(b) {
		// A kept form that stands more than once changes in as many
		// places: count them, and call a change of most of a short
		// text (a colour code drawn from a hash) whole.
		differ := 0
		for i := range len(a) {
			if a[i] != b[i] {
				differ++
			}
		}
		return differ <= nearSpan && differ*2 <= len(a)
	}
	for len(a) > 0 && len(b) > 0 && a[0] == b[0] {
		a, b = a[1:], b[1:]
	}
	for len(a) > 0 && len(b) > 0 && a[len(a)-1] == b[len(b)-1] {
		a, b = a[:len(a)-1], b[:len(b)-1]
	}
	return max(len(a), len(b)) <= nearSpan
}

// nearSpan is the longest stretch near takes for a kept form of a
// one-character change: base64 and hex spread one character over two or
// three, percent-encoding over three.
const nearSpan = 6

// linesNear reports whether two logs differ in their number of lines or
// in a line that is near its counterpart.
func linesNear(a, b string) bool {
	la, lb := strings.Split(a, "\n"), strings.Split(b, "\n")
	if len(la) != len(lb) {
		return true
	}
	for i := range la {
		if near(la[i], lb[i]) {
			return true
		}
	}
	return false
}

// worldRequests are the requests of a session's deliveries, in order.
func (c *run) worldRequests(w *recorder.World, s *recorder.Session) []recorder.Request {
	ids := map[int]bool{}
	for _, d := range s.Deliveries {
		ids[d.ID] = true
	}
	var out []recorder.Request
	for _, r := range w.Requests() {
		if ids[r.Delivery] {
			out = append(out, r)
		}
	}
	return out
}

// elsewhere renders the requests to hosts outside hosts, for comparing.
func elsewhere(reqs []recorder.Request, hosts []string) []string {
	var out []string
	for _, r := range reqs {
		if !flowtype.EgressAllows(hosts, r.Host) {
			out = append(out, fmt.Sprintf("%d %s %s %v %x", r.Delivery, r.Method, r.URL, r.Header, r.Body))
		}
	}
	return out
}
