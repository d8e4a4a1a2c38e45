package gen

import (
	"fmt"
	"slices"
	"time"

	"github.com/dave/jennifer/jen"

	"github.com/flowgen-dev/flowgen/connectorspec"
	"github.com/flowgen-dev/flowgen/runtime"
)

// Declare computes the declaration of the connector s, whose NodeInfo is
// what its generated package's Info() returns (a test holds them
// together): for hosts that run a connector from its spec, not from its
// generated package.
func Declare(s *connectorspec.Spec) (runtime.Declaration, error) {
	p := newPlan(s, newSharedSet())
	if p.diags.HasErrors() {
		return runtime.Declaration{}, fmt.Errorf("%s: %v", s.ID, p.diags.Err())
	}
	d := runtime.Declaration{
		ID: s.ID, Version: s.Version, Effects: s.Effects, Determinism: s.Determinism,
		KeySchema: s.KeySchema(), Capabilities: capNames(s), Egress: slices.Clone(s.Egress), Secrets: secretHandles(s), SecretHosts: secretHosts(s),
		Classes: p.m.dataClasses, InPort: p.inPort, OutPort: p.outPort,
	}
	if s.Retry != nil {
		d.RetryOwner = s.Retry.Owner
		if rp := s.Retry.Policy; rp != nil {
			d.Retry = runtime.RetryPolicy{
				InitialInterval: time.Duration(rp.InitialInterval), BackoffCoefficient: rp.BackoffCoefficient,
				MaxInterval: time.Duration(rp.MaxInterval), MaxAttempts: rp.MaxAttempts, NonRetryable: slices.Clone(rp.NonRetryable),
			}
		}
	}
	if s.Idempotency != nil {
		d.KeyScope = s.Idempotency.Scope
		d.KeyFields = slices.Clone(s.Idempotency.Key)
	}
	if s.RateLimit != nil {
		d.RateLimit = runtime.RateLimit{QPS: s.RateLimit.QPS, Burst: s.RateLimit.Burst}
	}
	if c := s.Cache; c != nil && len(c.Key)+len(c.Pin) > 0 {
		keys := slices.Clone(c.Key)
		for _, f := range c.Pin { // a pin is part of the key
			if !slices.Contains(keys, f) {
				keys = append(keys, f)
			}
		}
		d.Cache = runtime.Cache{Key: keys, TTL: time.Duration(c.TTL)}
	}
	return d, nil
}

// secretHandles are the handles a spec declares, in its order.
func secretHandles(s *connectorspec.Spec) []string {
	var handles []string
	for _, sec := range s.Secrets {
		handles = append(handles, sec.Handle)
	}
	return handles
}

// secretHosts are the egress entries each declared secret may be sent
// to (nil when there are no secrets).
func secretHosts(s *connectorspec.Spec) map[string][]string {
	if len(s.Secrets) == 0 {
		return nil
	}
	out := map[string][]string{}
	for _, sec := range s.Secrets {
		out[sec.Handle] = slices.Clone(s.SecretHosts(sec))
	}
	return out
}

// secretHostsCode is a SecretHosts literal, handles sorted.
func secretHostsCode(hosts map[string][]string) jen.Code {
	d := jen.Dict{}
	for _, h := range sortedKeysOf(hosts) {
		d[jen.Lit(h)] = stringSlice(hosts[h])
	}
	return jen.Map(jen.String()).Index().String().Values(d)
}
