package connectorspec

import (
	"cmp"
	"fmt"
	"net/netip"
	"net/url"
	"path"
	"regexp"
	"slices"
	"strings"

	"github.com/Masterminds/semver/v3"
	"github.com/google/uuid"
	"github.com/santhosh-tekuri/jsonschema/v6"
	"golang.org/x/net/publicsuffix"

	"github.com/flowgen-dev/flowgen/diag"
	"github.com/flowgen-dev/flowgen/flowtype"
	"github.com/flowgen-dev/flowgen/internal/addrclass"
	"github.com/flowgen-dev/flowgen/internal/strictyaml"
)

var (
	idPattern        = regexp.MustCompile(`^[a-z][a-z0-9_]*(\.[a-z][a-z0-9_]*)+$`)
	dataClassPattern = regexp.MustCompile(`^(public|internal|confidential|pii|financial|health|credential)(\.[a-z0-9_]+)*$`)
)

// IDPattern is the regular expression connector ids match.
const IDPattern = `^[a-z][a-z0-9_]*(\.[a-z][a-z0-9_]*)+$`

// checker runs the spec-level checks of one spec.
type checker struct {
	spec  *Spec
	docs  *schemaDocs
	diags *diag.List
	dir   string
}

func (c *checker) add(pos diag.Pos, code diag.Code, fix, format string, args ...any) {
	c.diags.Add(pos, code, fix, format, args...)
}

func (c *checker) run() {
	s := c.spec
	if s.ID != "" && !idPattern.MatchString(s.ID) {
		c.add(s.At("id"), diag.FMT006, "use lower-case dotted words such as payments.charge", "invalid connector id %q", s.ID)
	}
	if s.Version != "" {
		if _, err := semver.StrictNewVersion(s.Version); err != nil {
			c.add(s.At("version"), diag.FMT006, "write a semantic version such as 1.2.0", "invalid version %q: %v", s.Version, err)
		}
	}
	if len(s.Inputs) == 0 && s.Source.Has("inputs") {
		c.add(s.At("inputs"), diag.FMT006, "declare at least one input port, usually \"in\"", "a connector needs an input port")
	}
	c.capabilities()
	c.idempotency()
	c.retry()
	c.cache()
	c.dataClasses()
	c.egress()
	c.secrets()
	c.auth()
	c.compensation()
	c.fixtures()
	c.fixtureEnv()
}

// capabilities checks names and ranges (CAPV101) and that the declared effects
// and determinism are what the capabilities allow (EFFECT201, DET302).
func (c *checker) capabilities() {
	s := c.spec
	for _, req := range s.Capabilities {
		info, ok := flowtype.LookupCapability(req.Name)
		if !ok {
			c.add(req.At("name"), diag.CAPV101, "known capabilities: "+strings.Join(flowtype.CapabilityNames(), ", "),
				"unknown capability %q", req.Name)
			continue
		}
		if req.Version != "" {
			cons, err := semver.NewConstraint(req.Version)
			if err != nil {
				c.add(req.At("version"), diag.FMT006, "write a range such as ^1.0 or >=1.2, <2", "invalid version range %q: %v", req.Version, err)
				continue
			}
			if !cons.Check(semver.MustParse(info.Version)) {
				c.add(req.At("version"), diag.CAPV101, fmt.Sprintf("widen the range to include %s", info.Version),
					"capability %s %s is not satisfied by the runtime's version %s", req.Name, req.Version, info.Version)
			}
		}
		if info.Effects > s.Effects {
			c.add(s.At("effects"), diag.EFFECT201, fmt.Sprintf("declare effects: %s, or drop the %s capability", info.Effects, req.Name),
				"effects %s is weaker than capability %s implies (%s)", s.Effects, req.Name, info.Effects)
		}
		if info.Determinism > s.Determinism {
			fix := fmt.Sprintf("declare determinism: %s", info.Determinism)
			if req.Name == flowtype.HTTPRead {
				fix += ", or use http.read.pinned with an etag or content hash"
			}
			c.add(s.At("determinism"), diag.DET302, fix,
				"determinism %s is stronger than capability %s allows (%s)", s.Determinism, req.Name, info.Determinism)
		}
	}
}

// inputRoot returns the primary input port's schema object.
func (c *checker) inputRoot() (schemaNode, bool) {
	port := c.spec.PrimaryInputPort()
	if port == "" || c.spec.InputSchema(port) == nil {
		return schemaNode{}, false
	}
	return c.root(c.spec.Inputs[port])
}

// keyFields checks that every listed field exists in the primary input port
// (IDEM021) and, when stable is set, that it is Strict or Stable (IDEM025).
func (c *checker) keyFields(fields []string, src diag.Source, fieldName string, stable bool) {
	in, ok := c.inputRoot()
	if !ok {
		return
	}
	for _, f := range fields {
		n, found := c.field(in, f)
		if !found {
			c.add(src.At(fieldName), diag.IDEM021, "fields of the input port: "+strings.Join(propertyNames(in), ", "),
				"%s field %q is not a property of input port %q", fieldName, f, c.spec.PrimaryInputPort())
			continue
		}
		if !stable {
			continue
		}
		if det, ok := n.m["x-determinism"].(string); ok {
			var d flowtype.Determinism
			if err := d.UnmarshalText([]byte(det)); err == nil && d > flowtype.Stable {
				c.add(src.At(fieldName), diag.IDEM025, "key on a field whose value is the same on every delivery, such as a client-supplied order id",
					"key field %q is %s; only Strict or Stable fields may form an idempotency key", f, d)
			}
		}
	}
}

func (c *checker) idempotency() {
	s := c.spec
	if s.Effects == flowtype.Effectful && (s.Idempotency == nil || len(s.Idempotency.Key) == 0) {
		pos := s.At("effects")
		if s.Idempotency != nil {
			pos = s.Idempotency.At("key")
		}
		c.add(pos, diag.DAG004, "add idempotency: {key: [<input fields that identify the effect>]}",
			"effectful connector %s has no idempotency key", s.ID)
	}
	if s.Idempotency != nil {
		c.keyFields(s.Idempotency.Key, s.Idempotency.Source, "key", true)
		for i, d := range s.Idempotency.ProviderDedupe {
			if (d.Header == "") == (d.BodyField == "") {
				c.add(d.At("header"), diag.FMT006, "name the header (header: Idempotency-Key) or the JSON body field (bodyField: idempotency_key) the provider deduplicates on", "providerDedupe[%d] names %s", i, map[bool]string{true: "both a header and a body field", false: "neither a header nor a body field"}[d.Header != ""])
			}
			if !strings.HasPrefix(d.Path, "/") {
				c.add(d.At("path"), diag.FMT006, "write the URL path, starting with /", "providerDedupe[%d] path %q is not a URL path", i, d.Path)
			}
			if u := d.UUID; u != nil {
				c.dedupeUUID(i, u, s.Idempotency.Key)
			}
		}
		if n := s.Idempotency.EffectsPerCall; n < 0 || n > 100 {
			c.add(s.Idempotency.At("effectsPerCall"), diag.FMT006, "give how many effects one call takes, 1 to 100 (default 1)", "effectsPerCall %d is out of range", n)
		}
	}
}

// dedupeUUID checks the name-based UUID derivation of providerDedupe[i]:
// a namespace that is a UUID, version 5 or 3, and a name the key binds:
// the key itself, or the key's field when the key is that one field (a
// field of several would let keys that differ elsewhere share a UUID).
func (c *checker) dedupeUUID(i int, u *DedupeUUID, key []string) {
	if _, err := uuid.Parse(u.Namespace); err != nil {
		c.add(u.At("namespace"), diag.FMT006, "write the namespace as a UUID, e.g. 6f1f2a9e-0c3b-4d5e-8f70-1a2b3c4d5e6f", "providerDedupe[%d].uuid namespace %q is not a UUID: %v", i, u.Namespace, err)
	}
	if u.Version != 0 && u.Version != 3 && u.Version != 5 {
		c.add(u.At("version"), diag.FMT006, "use 5 (uuid.NewSHA1) or 3 (uuid.NewMD5)", "providerDedupe[%d].uuid version %d is not a name-based UUID version", i, u.Version)
	}
	if u.Name != "" && u.Name != "key" && !(len(key) == 1 && key[0] == u.Name) {
		c.add(u.At("name"), diag.FMT006, "use name: key and derive from ctx.IdempotencyKey(), which binds every key field", "providerDedupe[%d].uuid name %q is neither key nor the idempotency key's one field", i, u.Name)
	}
}

func (c *checker) retry() {
	r := c.spec.Retry
	if r == nil || r.Policy == nil {
		return
	}
	p := r.Policy
	if r.Owner == flowtype.RetryNone && p.MaxAttempts > 1 {
		c.add(r.At("owner"), diag.RETRY011, "set owner: connector or orchestrator, or set maxAttempts: 1",
			"retry policy allows %d attempts but the retry owner is none", p.MaxAttempts)
	}
	if p.MaxAttempts < 1 {
		c.add(p.At("maxAttempts"), diag.FMT006, "", "maxAttempts must be at least 1, got %d", p.MaxAttempts)
	}
	if p.Source.Has("backoffCoefficient") && p.BackoffCoefficient < 1 {
		c.add(p.At("backoffCoefficient"), diag.FMT006, "", "backoffCoefficient must be at least 1, got %g", p.BackoffCoefficient)
	}
	if p.InitialInterval <= 0 && p.Source.Has("initialInterval") {
		c.add(p.At("initialInterval"), diag.FMT006, "", "initialInterval must be positive")
	}
	if p.MaxInterval != 0 && p.MaxInterval < p.InitialInterval {
		c.add(p.At("maxInterval"), diag.FMT006, "", "maxInterval %s is shorter than initialInterval %s", p.MaxInterval, p.InitialInterval)
	}
}

func (c *checker) cache() {
	s := c.spec
	switch {
	case s.Determinism == flowtype.Strict && s.Cache == nil:
		c.add(s.At("determinism"), diag.CACHE001, "add cache: {key: [...], ttl: 24h} so replays can reuse results",
			"Strict connector %s declares no cache policy", s.ID)
	case s.Determinism == flowtype.Stable && (s.Cache == nil || len(s.Cache.Pin) == 0):
		pos := s.At("determinism")
		if s.Cache != nil {
			pos = s.Cache.Pos
		}
		c.add(pos, diag.CACHE002, "add cache: {pin: [<input field holding the etag, hash or version id>]}",
			"Stable connector %s does not say which input pins its external reads", s.ID)
	}
	if s.Cache != nil {
		if s.Cache.Tier != "" && s.Cache.Tier != "memory" && s.Cache.Tier != "disk" {
			c.add(s.Cache.At("tier"), diag.FMT006, "use memory or disk", "unknown cache tier %q", s.Cache.Tier)
		}
		c.keyFields(s.Cache.Key, s.Cache.Source, "key", false)
		c.keyFields(s.Cache.Pin, s.Cache.Source, "pin", false)
	}
}

// dataClasses requires an x-data-class on every property of params and ports
// (DATA101) and checks its value (DATA102).
func (c *checker) dataClasses() {
	seen := map[string]bool{}
	var visit func(n schemaNode)
	visit = func(n schemaNode) {
		// A schema file is visited once however many ports refer to it;
		// inline schemas share the spec's file name, so their position
		// tells them apart.
		key := fmt.Sprintf("%s:%d:%d#%s", n.doc.File, n.doc.Pos.Line, n.doc.Pos.Col, n.ptr)
		if seen[key] {
			return
		}
		seen[key] = true
		walkSchemaObjects(n, func(prop schemaNode, name string) {
			cls, has := prop.m["x-data-class"]
			if !has {
				if target := c.deref(prop); target.ptr != prop.ptr || target.doc.File != prop.doc.File {
					cls, has = target.m["x-data-class"]
				}
			}
			if !has {
				c.add(prop.pos(), diag.DATA101, "add x-data-class: public, or a class such as pii.email or financial.card",
					"property %q has no x-data-class", name)
				return
			}
			if s, ok := cls.(string); !ok || !dataClassPattern.MatchString(s) {
				c.add(prop.doc.PosOf(prop.ptr+"/x-data-class"), diag.DATA102,
					"use public, internal, confidential, or pii/financial/health/credential with optional .subclass",
					"property %q has unknown data class %v", name, cls)
			}
		}, func(ref schemaNode) { visit(ref) }, c)
	}
	roots := []strictyaml.Raw{c.spec.Params}
	for _, k := range sortedKeys(c.spec.Inputs) {
		roots = append(roots, c.spec.Inputs[k])
	}
	for _, k := range sortedKeys(c.spec.Outputs) {
		roots = append(roots, c.spec.Outputs[k])
	}
	for _, r := range roots {
		if m, ok := r.Value.(map[string]any); ok {
			visit(schemaNode{m: m, doc: r, dir: c.dir})
		}
	}
}

// walkSchemaObjects calls prop for each property declared anywhere inside n
// (nested objects, array items, $defs, combinators) and follows for each
// schema in another file that n refers to.
func walkSchemaObjects(n schemaNode, prop func(schemaNode, string), follow func(schemaNode), c *checker) {
	var walk func(n schemaNode)
	walk = func(n schemaNode) {
		if ref, ok := n.m["$ref"].(string); ok && !strings.HasPrefix(ref, "#") {
			if target := c.deref(n); target.doc.File != n.doc.File {
				follow(target)
			}
		}
		child := func(v any, ptr string) {
			if m, ok := v.(map[string]any); ok {
				walk(schemaNode{m: m, doc: n.doc, ptr: ptr, dir: n.dir})
			}
		}
		if props, ok := n.m["properties"].(map[string]any); ok {
			for _, name := range sortedKeys(props) {
				ptr := n.ptr + "/properties/" + strictyaml.PointerEscape(name)
				if m, ok := props[name].(map[string]any); ok {
					prop(schemaNode{m: m, doc: n.doc, ptr: ptr, dir: n.dir}, name)
				}
				child(props[name], ptr)
			}
		}
		child(n.m["items"], n.ptr+"/items")
		child(n.m["additionalProperties"], n.ptr+"/additionalProperties")
		for _, defs := range []string{"$defs", "definitions"} {
			if m, ok := n.m[defs].(map[string]any); ok {
				for _, name := range sortedKeys(m) {
					child(m[name], n.ptr+"/"+defs+"/"+strictyaml.PointerEscape(name))
				}
			}
		}
		for _, comb := range []string{"oneOf", "anyOf", "allOf"} {
			if list, ok := n.m[comb].([]any); ok {
				for i, e := range list {
					child(e, fmt.Sprintf("%s/%s/%d", n.ptr, comb, i))
				}
			}
		}
	}
	walk(n)
}

// egress checks host syntax, that no entry names a special-purpose
// address or a public suffix (EGRESS103), and that network capabilities
// come with an allowlist (EGRESS102).
func (c *checker) egress() {
	s := c.spec
	for i, h := range s.Egress {
		e, err := flowtype.ParseEgress(h)
		if err != nil {
			c.add(s.At("egress"), diag.FMT006, "write a host name such as api.stripe.com, *.stripe.com or an IP address, with an optional :port (api.example.com:8443)",
				"egress[%d]: %v", i, err)
			continue
		}
		if why := egressHazard(e); why != "" {
			c.add(s.At("egress"), diag.EGRESS103, "name the provider's own public host; route it to a local stand-in with FLOWGEN_CONNECT_TO, not in the spec",
				"egress[%d] %s: %s", i, h, why)
		}
	}
	if len(s.Egress) > 0 {
		return
	}
	for _, req := range s.Capabilities {
		if info, ok := flowtype.LookupCapability(req.Name); ok && info.Network {
			c.add(req.At("name"), diag.EGRESS102, "add egress: [<host the connector calls>]",
				"capability %s reaches the network but the connector declares no egress hosts", req.Name)
		}
	}
}

// auth checks the token endpoint: an https URL, no query, whose last
// path segment names a token, on a host within egress, sent by a
// connector that may POST (FMT006); a token
// cache needs kv.write and a "*" only at its end (FMT006).
func (c *checker) auth() {
	a := c.spec.Auth
	if a == nil {
		return
	}
	has := func(name flowtype.Capability) bool {
		return slices.ContainsFunc(c.spec.Capabilities, func(r CapabilityRequest) bool { return r.Name == name })
	}
	u, err := url.Parse(a.TokenURL)
	switch {
	case err != nil || u.Scheme != "https" || u.Host == "" || u.User != nil:
		c.add(a.At("tokenURL"), diag.FMT006, "write the endpoint as an https URL, e.g. https://login.example.com/oauth2/token",
			"auth.tokenURL %q is not an https URL", a.TokenURL)
	case u.RawQuery != "" || u.Fragment != "":
		c.add(a.At("tokenURL"), diag.FMT006, "leave the query out: the endpoint is its scheme, host and path",
			"auth.tokenURL %q has a query or fragment", a.TokenURL)
	case !strings.Contains(strings.ToLower(path.Base(u.Path)), "token"):
		// The rule that keeps a write from being declared a token
		// request: providers name the endpoint so (/oauth2/token,
		// /v1/token, /connect/token, /oauth/access_token).
		c.add(a.At("tokenURL"), diag.FMT006, "name the provider's token endpoint, whose path ends in a token segment, e.g. /oauth2/token",
			"auth.tokenURL %q: its last path segment does not name a token, so it is not a token endpoint", a.TokenURL)
	case !flowtype.EgressAllows(c.spec.Egress, flowtype.TargetOf(u)):
		c.add(a.At("tokenURL"), diag.FMT006, "add the token endpoint's host to egress:",
			"auth.tokenURL %q is on %s, which the connector's egress does not allow", a.TokenURL, flowtype.TargetOf(u))
	}
	if !has(flowtype.HTTPWrite) {
		c.add(a.At("tokenURL"), diag.FMT006, "declare the http.write capability, which sends the token request's POST",
			"auth.tokenURL: a token request is a POST, and the connector does not declare http.write")
	}
	if a.TokenCache == "" {
		return
	}
	if strings.Contains(strings.TrimSuffix(a.TokenCache, "*"), "*") || a.TokenCache == "*" {
		c.add(a.At("tokenCache"), diag.FMT006, "name the entry, e.g. oauth/token, or entries with a common prefix, e.g. oauth/token/*",
			"auth.tokenCache %q: a * may only end a prefix", a.TokenCache)
	}
	if !has(flowtype.KVWrite) {
		c.add(a.At("tokenCache"), diag.FMT006, "declare the kv.write capability, or leave tokenCache out",
			"auth.tokenCache: the connector does not declare kv.write")
	}
}

// secrets checks that no secret grants scopes the connector did not request
// (SECR201), and that every secret says where it may be sent, within the
// connector's egress (SECR202).
func (c *checker) secrets() {
	for _, sec := range c.spec.Secrets {
		hosts := c.spec.SecretHosts(sec)
		switch {
		case len(hosts) == 0 && len(c.spec.Egress) > 1:
			c.add(sec.At("handle"), diag.SECR202, "list under hosts: the egress entries the secret is sent to",
				"secret %q: the connector may reach %s; say which of them the secret may be sent to", sec.Handle, strings.Join(c.spec.Egress, ", "))
		default:
			for _, h := range sec.Hosts {
				if !flowtype.EgressWithin(h, c.spec.Egress) {
					c.add(sec.At("hosts"), diag.SECR202, "list hosts within egress:, or add the host to egress:",
						"secret %q may be sent to %s, which the connector's egress does not allow", sec.Handle, h)
				}
			}
		}
		if f := sec.Format; f != nil && (f.Length < 0 || f.Length > 512 || len(f.Prefix) > 64) {
			c.add(sec.At("format"), diag.FMT006, "give a length of 1-512 characters and a prefix of at most 64",
				"secret %q: format length %d, prefix of %d characters", sec.Handle, f.Length, len(f.Prefix))
		}
		var wider []string
		for _, sc := range sec.Scopes {
			if !slices.Contains(c.spec.Scopes, sc) {
				wider = append(wider, sc)
			}
		}
		if len(wider) > 0 {
			c.add(sec.At("scopes"), diag.SECR201, "issue the secret with only the connector's scopes, or request the scopes in scopes:",
				"secret %q grants scopes the connector does not request: %s", sec.Handle, strings.Join(wider, ", "))
		}
	}
}

// compensation checks the undo key (SAGA205); the compensator's port is
// checked against a catalogue by CheckCompensators.
func (c *checker) compensation() {
	comp := c.spec.Compensation
	if comp == nil {
		return
	}
	if len(comp.UndoKey) == 0 {
		c.add(comp.At("undoKey"), diag.SAGA205, "list the output fields that identify the effect to undo, e.g. [charge_id]",
			"compensation by %s has no undo key, so a repeated undo could run twice", comp.Connector)
		return
	}
	port := c.spec.PrimaryOutputPort()
	if port == "" || c.spec.OutputSchema(port) == nil {
		return
	}
	out, ok := c.root(c.spec.Outputs[port])
	if !ok {
		return
	}
	for _, f := range comp.UndoKey {
		if _, found := c.field(out, f); !found {
			c.add(comp.At("undoKey"), diag.IDEM021, "fields of the output port: "+strings.Join(propertyNames(out), ", "),
				"undoKey field %q is not a property of output port %q", f, port)
		}
	}
}

// fixtures validates each fixture's input, output and params against the
// declared schemas (FIX001).
func (c *checker) fixtures() {
	s := c.spec
	names := map[string]diag.Pos{}
	for _, fx := range s.Fixtures {
		if first, dup := names[fx.Name]; dup && fx.Name != "" {
			c.add(fx.At("name"), diag.FMT004, "give every fixture its own name", "duplicate fixture name %q (first at line %d)", fx.Name, first.Line)
		}
		names[fx.Name] = fx.At("name")
		c.instance(fx.Name, "input", fx.Input, s.InputSchema(s.PrimaryInputPort()))
		if !fx.Output.IsZero() {
			c.instance(fx.Name, "output", fx.Output, s.OutputSchema(s.PrimaryOutputPort()))
		}
		if !fx.Params.IsZero() {
			c.instance(fx.Name, "params", fx.Params, s.ParamsSchema())
		}
		if fx.Error != nil && !fx.Output.IsZero() {
			c.add(fx.At("error"), diag.FMT006, "keep either output or error", "fixture %q expects both an output and an error", fx.Name)
		}
		c.fixtureKind(fx)
		for i, ex := range fx.HTTP {
			switch st := ex.Response.Status; {
			case ex.Response.Timeout && st != 0:
				c.add(ex.Response.At("timeout"), diag.FMT006, "drop status, or drop timeout: true", "fixture %q http[%d]: a response that times out has no status", fx.Name, i)
			case ex.Response.Timeout:
			case st < 100 || st > 599:
				pos := ex.Response.At("status")
				if st == 0 {
					pos = ex.At("response")
				}
				c.add(pos, diag.FMT006, "write status: 200 (or another HTTP status), or timeout: true", "fixture %q http[%d]: invalid status %d", fx.Name, i, st)
			}
		}
	}
}

// fixtureEnv checks that fixture secrets name declared handles and that a
// fixture database comes with a db capability.
func (c *checker) fixtureEnv() {
	env := c.spec.FixtureEnv
	if env == nil {
		return
	}
	declared := map[string]bool{}
	for _, sec := range c.spec.Secrets {
		declared[sec.Handle] = true
	}
	for _, h := range sortedKeys(env.Secrets) {
		if !declared[h] {
			c.add(env.At("secrets"), diag.FMT006, "declare it under secrets:, or drop it from fixtureEnv.secrets",
				"fixtureEnv.secrets names %q, which is not a declared secret handle", h)
		}
	}
	if env.Database != nil && !slices.ContainsFunc(c.spec.Capabilities, func(r CapabilityRequest) bool {
		return r.Name == flowtype.DBRead || r.Name == flowtype.DBWrite
	}) {
		c.add(env.At("database"), diag.FMT006, "declare db.read or db.write, or drop fixtureEnv.database",
			"fixtureEnv.database is set but the connector declares no db capability")
	}
}

// fixtureKind checks that an error fixture expects the kind the error
// taxonomy gives the answer that decided it (FIX002): the last error
// answer of its recording, whatever succeeded after it (a 401, then a
// 200 to a request that fails anyway, is an Auth failure). A 429
// expected as Permanent would be retried never, a 401 expected as
// Transient forever.
func (c *checker) fixtureKind(fx Fixture) {
	if fx.Error == nil {
		return
	}
	last, ok := decisiveAnswer(fx.HTTP)
	if !ok {
		return
	}
	kinds := flowtype.KindsForResponse(last.Status, last.Timeout, last.retryAfter())
	if len(kinds) == 0 || slices.Contains(kinds, fx.Error.Kind) {
		return
	}
	answer := fmt.Sprintf("status %d", last.Status)
	if last.Timeout {
		answer = "a timeout"
	}
	var names []string
	for _, k := range kinds {
		names = append(names, k.String())
	}
	c.add(fx.Error.At("kind"), diag.FIX002, fmt.Sprintf("expect %s, and map %s to it in the connector", strings.Join(names, " or "), answer),
		"fixture %q expects %s, but the error answer that decides it is %s, which the error taxonomy makes %s",
		fx.Name, fx.Error.Kind, answer, strings.Join(names, " or "))
}

// instance validates one fixture value and reports each failing leaf at the
// position of the offending element.
func (c *checker) instance(fixture, what string, v strictyaml.Raw, sch *jsonschema.Schema) {
	if sch == nil {
		return
	}
	err := sch.Validate(v.JSON())
	ve, ok := err.(*jsonschema.ValidationError)
	if !ok {
		return
	}
	for _, p := range validationProblems(v, ve) {
		c.add(p.Pos, diag.FIX001, "make the fixture match the port schema, or fix the schema",
			"fixture %q %s at %s: %s", fixture, what, cmp.Or(p.Loc, "/"), p.Msg)
	}
}

// egressHazard says why an egress entry reaches what no connector may be
// allowed to ("" when it does not): an address or a name of this machine,
// a private, link-local, metadata or other special-purpose network, or a
// wildcard over a public suffix (*.com, *.s3.amazonaws.com: every domain
// anyone registers there).
func egressHazard(e flowtype.EgressEntry) string {
	if ip, err := netip.ParseAddr(e.Host); err == nil {
		if what := addrclass.Special(ip); what != "" {
			return "the address is " + what
		}
		return ""
	}
	if what := addrclass.SpecialName(e.Host); what != "" {
		return "the name is " + what
	}
	if suffix, _ := publicsuffix.PublicSuffix(e.Host); e.Wildcard && suffix == e.Host {
		return "the wildcard covers every domain registered under the public suffix " + suffix
	}
	return ""
}

// decisiveAnswer is the last answer of a recording that is an error (a
// timeout, or a status the error taxonomy gives a kind); false when every
// answer succeeded.
// retryAfter reports whether the answer carries a Retry-After header.
func (r Response) retryAfter() bool {
	for name, v := range r.Headers {
		if strings.EqualFold(name, "Retry-After") && strings.TrimSpace(v) != "" {
			return true
		}
	}
	return false
}

func decisiveAnswer(http []Exchange) (Response, bool) {
	for i := len(http) - 1; i >= 0; i-- {
		r := http[i].Response
		if len(flowtype.KindsForResponse(r.Status, r.Timeout, false)) > 0 {
			return r, true
		}
	}
	return Response{}, false
}
