package certify

import (
	"fmt"
	"slices"
	"strings"

	"github.com/flowgen-dev/flowgen/certify/recorder"
	"github.com/flowgen-dev/flowgen/connectorspec"
)

// dataClasses feeds canaries (marked values) into every input field
// classified confidential or above and into every secret, runs the
// fixtures that expect an output, and fails when a canary comes out where
// its class may not go: an output field of a weaker class (secrets: any
// output), an error message (errors reach job state and logs), the
// process's output (logs), or a request to a host outside the egress
// allowlist.
func (c *run) dataClasses(ch *Check) {
	secretValues, secretSubs, canaries := c.canarySecrets()
	world, err := c.newWorld(fixtureNow)
	if err != nil {
		ch.Outcome, ch.Summary = Fail, err.Error()
		return
	}
	s := &recorder.Session{World: world, Mode: recorder.Provider, Fresh: true, Concurrency: 1}
	names := map[int]string{}
	for i, fx := range c.manifest.Fixtures {
		if !fx.Succeeds() {
			continue
		}
		v, cs := c.canaryVariant(fx)
		v = substitute(v, secretSubs)
		p, err := c.plan(i, v, 1, fixtureNow)
		if err != nil {
			continue
		}
		p.Secrets = secretValues
		s.Deliveries = append(s.Deliveries, p)
		names[i] = fx.Name
		canaries = append(canaries, cs...)
	}
	if len(canaries) == 0 {
		ch.Outcome, ch.Summary = Pass, "nothing to trace: no input field is classified confidential or above, and there are no secrets"
		return
	}
	if len(s.Deliveries) == 0 {
		ch.Outcome, ch.Summary = Warn, "no fixture expects an output, so no canary was traced"
		return
	}
	p := c.runSession(s, variants[0])
	var leaks, notes []string
	outSchema := c.spec.OutputSchema(c.spec.PrimaryOutputPort())
	for _, d := range s.Deliveries {
		name := names[d.ID]
		res, ok := p.Results[d.ID]
		switch {
		case !ok:
			leaks = append(leaks, fmt.Sprintf("fixture %q with canaries: no result: %s", name, p.failure()))
			continue
		case res.Error != nil:
			notes = append(notes, fmt.Sprintf("fixture %q with canaries failed (%s), so its output was not traced: %s", name, res.Error.Kind, res.Error.Message))
			for _, cn := range canaries {
				if strings.Contains(res.Error.Message, cn.token) {
					leaks = append(leaks, fmt.Sprintf("fixture %q: the %s value from %s appears in the error message, which reaches job state and logs", name, cn.class, cn.origin))
				}
			}
			continue
		}
		out, err := decodeJSON(res.Output)
		if err != nil {
			continue
		}
		connectorspec.WalkClasses(outSchema, out, func(ptr, class string, leaf any) {
			str, ok := leaf.(string)
			if !ok {
				return
			}
			for _, cn := range canaries {
				if !strings.Contains(str, cn.token) {
					continue
				}
				switch {
				case cn.class == "secret":
					leaks = append(leaks, fmt.Sprintf("fixture %q: the value of secret %s appears in output %s", name, cn.origin, ptr))
				case connectorspec.ClassRank(class) < connectorspec.ClassRank(cn.class):
					shown := class
					if shown == "" {
						shown = "unclassified"
					}
					leaks = append(leaks, fmt.Sprintf("fixture %q: a %s value from input %s appears in output %s, classified %s", name, cn.class, cn.origin, ptr, shown))
				}
			}
		})
	}
	for _, cn := range canaries {
		for stream, text := range map[string]string{"stdout": p.Stdout, "stderr": p.Stderr} {
			if strings.Contains(text, cn.token) {
				leaks = append(leaks, fmt.Sprintf("the %s value from %s was written to %s (logs)", cn.class, originName(cn), stream))
			}
		}
		for _, req := range world.Requests() {
			if !c.allowed(req.Host) && strings.Contains(req.URL+string(req.Body)+fmt.Sprint(req.Header), cn.token) {
				leaks = append(leaks, fmt.Sprintf("the %s value from %s was sent to %s, which is not in the egress allowlist", cn.class, originName(cn), req.Host))
			}
		}
	}
	leaks = append(leaks, p.Protocol...)
	slices.Sort(leaks)
	leaks = slices.Compact(leaks)
	ch.Evidence = append(leaks, notes...)
	if len(leaks) > 0 {
		ch.Outcome, ch.Summary = Fail, "a classified or secret value reaches a weaker output, an error, the logs or a host it may not"
		return
	}
	ch.Outcome, ch.Summary = Pass, fmt.Sprintf("%d canaries (classified input fields and secrets) through %d fixtures: none reached a weaker output, an error, the logs or another host", len(canaries), len(s.Deliveries))
}

func originName(cn canary) string {
	if cn.class == "secret" {
		return "secret " + cn.origin
	}
	return "input " + cn.origin
}
