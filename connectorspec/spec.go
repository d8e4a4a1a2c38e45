// Package connectorspec reads, resolves and checks ConnectorSpec files.
//
// A ConnectorSpec describes one connector (one node type): its identity,
// effects and determinism, the capabilities it needs, its params and ports as
// JSON Schema, its idempotency, retry, rate-limit, egress, scope, secret,
// compensation and cache declarations, and its test fixtures. Files start with
// the header
//
//	apiVersion: flowgen.dev/v1
//	kind: ConnectorSpec
//
// and are parsed strictly: every unknown field, wrong type, duplicate key,
// invalid JSON Schema or missing $ref file is a diagnostic with file, line and
// column. Load reports all problems of a file at once.
//
// Decisions: field names are camelCase like apiVersion; port schemas may be
// inline or a $ref to a JSON or YAML file next to the spec (remote $refs are
// refused so that validation never touches the network); every schema property
// carries an x-data-class, and may carry x-determinism to say how reproducible
// the value is (IDEM025 uses it).
package connectorspec

import (
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/flowgen-dev/flowgen/diag"
	"github.com/flowgen-dev/flowgen/flowtype"
	"github.com/flowgen-dev/flowgen/internal/strictyaml"
)

// APIVersion is the only apiVersion this package reads.
const APIVersion = "flowgen.dev/v1"

// Kind is the kind header value of a ConnectorSpec file.
const Kind = "ConnectorSpec"

// PrimaryInput is the name of the input port that idempotency and cache key
// fields refer to when a connector has more than one input port.
const PrimaryInput = "in"

// Spec is one parsed ConnectorSpec. Fields mirror the file; after Load the
// port and params schemas are compiled and available through the methods.
type Spec struct {
	diag.Source  `json:"-"`
	APIVersion   string                    `json:"apiVersion" flowgen:"required" const:"flowgen.dev/v1" doc:"Format version; must be flowgen.dev/v1."`
	Kind         string                    `json:"kind" flowgen:"required" const:"ConnectorSpec" doc:"Must be ConnectorSpec."`
	ID           string                    `json:"id" flowgen:"required" doc:"Dotted connector id, e.g. payments.charge."`
	Version      string                    `json:"version" flowgen:"required" doc:"Semantic version of this connector."`
	Provider     string                    `json:"provider" flowgen:"required" doc:"Who operates the system the connector talks to."`
	Summary      string                    `json:"summary" flowgen:"required" doc:"One-line description."`
	Docs         string                    `json:"docs,omitempty" doc:"Longer documentation (Markdown)."`
	Effects      flowtype.Effects          `json:"effects" flowgen:"required" doc:"What the connector may do to the world."`
	Determinism  flowtype.Determinism      `json:"determinism" flowgen:"required" doc:"How reproducible the output is."`
	Capabilities []CapabilityRequest       `json:"capabilities,omitempty" doc:"Runtime capabilities the connector needs."`
	Params       strictyaml.Raw            `json:"params,omitzero" doc:"JSON Schema of the connector's configuration."`
	Inputs       map[string]strictyaml.Raw `json:"inputs" flowgen:"required" doc:"Input ports: name to JSON Schema."`
	Outputs      map[string]strictyaml.Raw `json:"outputs" flowgen:"required" doc:"Output ports: name to JSON Schema."`
	Idempotency  *Idempotency              `json:"idempotency,omitempty" doc:"How repeated calls are recognised."`
	Retry        *Retry                    `json:"retry,omitempty" doc:"Which layer retries, and how."`
	RateLimit    *RateLimit                `json:"rateLimit,omitempty" doc:"Calls per second the provider allows."`
	Egress       []string                  `json:"egress,omitempty" doc:"Where the connector may connect: hosts (exact, or *.example.com for the hosts below it) and IP addresses, each optionally with :PORT."`
	Scopes       []string                  `json:"scopes,omitempty" doc:"OAuth-style scopes the connector requests."`
	Secrets      []Secret                  `json:"secrets,omitempty" doc:"Secret handles (never values) the connector reads."`
	Auth         *Auth                     `json:"auth,omitempty" doc:"The provider's OAuth 2.0 token endpoint, and the KV entry the connector caches its token in."`
	Compensation *Compensation             `json:"compensation,omitempty" doc:"The connector that undoes this one's effect."`
	Cache        *Cache                    `json:"cache,omitempty" doc:"Caching of results for Strict and Stable connectors."`
	Fixtures     []Fixture                 `json:"fixtures,omitempty" doc:"Named test cases with recorded HTTP exchanges."`
	FixtureEnv   *FixtureEnv               `json:"fixtureEnv,omitempty" doc:"What the fixtures run with beyond the defaults: secret values, a database schema."`

	// File is the path the spec was loaded from.
	File string `json:"-"`

	compiled    map[string]*jsonschema.Schema // "inputs/in", "outputs/out", "params"
	schemaFiles []string                      // absolute paths, sorted
}

// CapabilityRequest names a capability and the semver range of it the
// connector works with.
type CapabilityRequest struct {
	diag.Source `json:"-"`
	Name        flowtype.Capability `json:"name" flowgen:"required" doc:"Capability name from the catalogue."`
	Version     string              `json:"version,omitempty" doc:"Semver range, e.g. ^1.0; any version when empty."`
}

// Idempotency declares how the runtime recognises a repeated call.
type Idempotency struct {
	diag.Source `json:"-"`
	Key         []string           `json:"key" flowgen:"required" doc:"Input fields (dotted paths) that form the key."`
	Scope       flowtype.IdemScope `json:"scope,omitempty" doc:"Node, Edge or Partition."`
	TTL         flowtype.Duration  `json:"ttl,omitempty" doc:"How long a key is remembered."`
	// EffectsPerCall bounds what one delivery of a key may change: a
	// delivery that takes more effects fails certification.
	EffectsPerCall int `json:"effectsPerCall,omitempty" doc:"How many effects (provider writes, rows, blobs, KV entries) one call takes at most (default 1); certification fails a delivery that takes more."`
	// ProviderDedupe is the provider's contract: where it deduplicates
	// writes, and on what. Certification's provider honours exactly it.
	ProviderDedupe []ProviderDedupe `json:"providerDedupe,omitempty" doc:"Where the provider deduplicates writes and on which header or body field; certification's provider honours exactly these (default: any write with an Idempotency-Key header)."`
}

// ProviderDedupe is one endpoint at which the provider deduplicates
// writes: on a header (Stripe's Idempotency-Key, PayPal's
// PayPal-Request-Id) or a JSON body field (Square's idempotency_key).
type ProviderDedupe struct {
	diag.Source `json:"-"`
	Method      string `json:"method" flowgen:"required" doc:"The HTTP method, e.g. POST."`
	Path        string `json:"path" flowgen:"required" doc:"The URL path, e.g. /v2/payments; a trailing * matches any rest."`
	Header      string `json:"header,omitempty" doc:"The request header the provider deduplicates on."`
	BodyField   string `json:"bodyField,omitempty" doc:"The JSON body field (dotted path) the provider deduplicates on."`
	// UUID declares that the value sent is a name-based UUID derived from
	// the activation's key: certification recomputes it, so a value it
	// cannot read the key in is still known to be bound to the key.
	UUID *DedupeUUID `json:"uuid,omitempty" doc:"The value sent is a name-based UUID (RFC 9562 version 5 or 3) of the activation's key or of its one key field; certification recomputes it for every write."`
}

// DedupeUUID is how a connector derives the dedupe value it sends as a
// name-based UUID: uuid.NewSHA1(namespace, name) for version 5 (the
// default), uuid.NewMD5 for version 3, with name ctx.IdempotencyKey() or
// the text of the key's one field. Certification accepts a value that
// holds exactly that UUID, in any case, with or without its dashes.
type DedupeUUID struct {
	diag.Source `json:"-"`
	Namespace   string `json:"namespace" flowgen:"required" doc:"The namespace UUID, e.g. a UUID the connector's author drew once."`
	Version     int    `json:"version,omitempty" doc:"5 (SHA-1, the default) or 3 (MD5)."`
	Name        string `json:"name,omitempty" doc:"What the UUID is made of: key (the default), ctx.IdempotencyKey(); or the idempotency key's one field (its dotted path), as its text."`
}

// MaxEffects is how many effects one call may take: EffectsPerCall, or 1.
func (i *Idempotency) MaxEffects() int {
	if i == nil || i.EffectsPerCall <= 0 {
		return 1
	}
	return i.EffectsPerCall
}

// Retry declares the single retry owner and its policy.
type Retry struct {
	diag.Source `json:"-"`
	Owner       flowtype.RetryOwner `json:"owner" flowgen:"required" doc:"connector, orchestrator or none."`
	Policy      *RetryPolicy        `json:"policy,omitempty" doc:"Backoff policy used by the owner."`
}

// RetryPolicy is an exponential backoff policy.
type RetryPolicy struct {
	diag.Source        `json:"-"`
	InitialInterval    flowtype.Duration    `json:"initialInterval" flowgen:"required" doc:"Delay before the first retry."`
	BackoffCoefficient float64              `json:"backoffCoefficient,omitempty" doc:"Multiplier per attempt (at least 1; default 2)."`
	MaxInterval        flowtype.Duration    `json:"maxInterval,omitempty" doc:"Upper bound on the delay."`
	MaxAttempts        int                  `json:"maxAttempts" flowgen:"required" doc:"Attempts including the first."`
	NonRetryable       []flowtype.ErrorKind `json:"nonRetryable,omitempty" doc:"Error kinds never retried."`
}

// RateLimit is a token bucket.
type RateLimit struct {
	diag.Source `json:"-"`
	QPS         float64 `json:"qps" flowgen:"required" doc:"Sustained calls per second."`
	Burst       int     `json:"burst,omitempty" doc:"Calls allowed at once."`
}

// Secret is a handle the runtime resolves to a secret value; the value itself
// never appears in a spec.
type Secret struct {
	diag.Source `json:"-"`
	Handle      string   `json:"handle" flowgen:"required" doc:"Name the secret store knows it by."`
	Scopes      []string `json:"scopes,omitempty" doc:"Scopes the secret grants."`
	// Hosts are the egress entries the secret may be sent to; a request
	// to any other host that carries it, in any encoding, is refused.
	Hosts []string `json:"hosts,omitempty" doc:"Egress entries the secret may be sent to (default: the connector's egress, when it has one entry); a request elsewhere that carries the secret is refused."`
	// Format is the shape of the provider's values, so that certification
	// draws look-alikes a connector cannot tell from real ones.
	Format *SecretFormat `json:"format,omitempty" doc:"The shape of the provider's values (prefix, alphabet, length), for certification to draw look-alikes."`
}

// SecretFormat is the shape of a secret's values: Prefix, then Length
// characters of Alphabet.
type SecretFormat struct {
	diag.Source `json:"-"`
	Prefix      string         `json:"prefix,omitempty" doc:"What every value starts with, e.g. sk_live_."`
	Alphabet    SecretAlphabet `json:"alphabet,omitempty" doc:"The characters after the prefix: base62 (default), base64url, hex, digits."`
	Length      int            `json:"length,omitempty" doc:"How many characters follow the prefix (default 32)."`
}

// SecretHosts are the egress entries the secret may be sent to: its
// Hosts, or the connector's egress when it has exactly one entry.
func (s *Spec) SecretHosts(sec Secret) []string {
	if len(sec.Hosts) > 0 || len(s.Egress) != 1 {
		return sec.Hosts
	}
	return s.Egress
}

// Auth declares the provider's OAuth 2.0 token endpoint (RFC 6749,
// section 3.2). A token request, a POST there whose form or JSON body
// names a grant_type, exchanges credentials for an access token and
// changes nothing at the provider: certification takes it for a read,
// however often a connector asks, and rewriting the KV entry TokenCache
// names is not an effect either. Anything else sent to the endpoint is
// judged as any other request.
type Auth struct {
	diag.Source `json:"-"`
	TokenURL    string `json:"tokenURL" flowgen:"required" doc:"The token endpoint: an https URL on a host within egress, e.g. https://login.example.com/oauth2/token. Only POSTs that name a grant_type there are token requests."`
	TokenCache  string `json:"tokenCache,omitempty" doc:"The KV entry the connector caches its token in (a trailing * matches any rest, e.g. oauth/token/* for one per tenant); rewriting it is not an effect. Needs kv.write."`
}

// Compensation names the connector that undoes this one's effect.
type Compensation struct {
	diag.Source `json:"-"`
	Connector   string   `json:"connector" flowgen:"required" doc:"Compensating connector as id@range."`
	UndoKey     []string `json:"undoKey" flowgen:"required" doc:"Output fields that key the undo idempotently."`
}

// Cache declares result caching.
type Cache struct {
	diag.Source `json:"-"`
	Key         []string          `json:"key,omitempty" doc:"Input fields forming the cache key."`
	TTL         flowtype.Duration `json:"ttl,omitempty" doc:"How long entries live."`
	Tier        string            `json:"tier,omitempty" doc:"memory or disk."`
	Pin         []string          `json:"pin,omitempty" doc:"Input fields that pin external resources (etag, hash, version id)."`
}

// FixtureEnv is what every fixture runs with beyond the defaults. It is
// data, not code: certification never runs the author's test files, so a
// fixture needing a secret of a particular form (a webhook URL) or a
// database table says so here.
type FixtureEnv struct {
	diag.Source `json:"-"`
	// Secrets maps a declared secret handle to the placeholder it resolves
	// to in fixtures (default "fixture-secret:" + handle). Never a real
	// secret: the spec travels in the artifact and its manifest.
	Secrets map[string]string `json:"secrets,omitempty" doc:"Placeholder value per declared secret handle (default fixture-secret:<handle>); never a real secret."`
	// Database declares the schema fixtures of a db.read or db.write
	// connector run against.
	Database *FixtureDatabase `json:"database,omitempty" doc:"The database schema fixtures run against (db capabilities)."`
}

// FixtureDatabase is the schema a db connector's fixtures need.
type FixtureDatabase struct {
	diag.Source `json:"-"`
	// Setup is PostgreSQL DDL (and seed rows) run in a fresh, empty schema
	// before each fixture.
	Setup string `json:"setup" flowgen:"required" doc:"PostgreSQL statements run in a fresh schema before each fixture (tables, seed rows)."`
}

// KeySchema names the spec's idempotency key schema: the id and the major
// version, "payments.charge@2".
func (s *Spec) KeySchema() string {
	major, _, _ := strings.Cut(strings.TrimPrefix(s.Version, "v"), ".")
	return s.ID + "@" + major
}

// FixtureSecret is the value handle resolves to in fixtures.
func (s *Spec) FixtureSecret(handle string) string {
	if s.FixtureEnv != nil {
		if v, ok := s.FixtureEnv.Secrets[handle]; ok {
			return v
		}
	}
	return "fixture-secret:" + handle
}

// Fixture is a named test case: an input, and either the expected output or
// the expected error, with the HTTP exchanges the connector makes.
type Fixture struct {
	diag.Source `json:"-"`
	Name        string         `json:"name" flowgen:"required" doc:"Unique fixture name."`
	Params      strictyaml.Raw `json:"params,omitzero" doc:"Params for this case."`
	Input       strictyaml.Raw `json:"input" flowgen:"required" doc:"Value sent to the primary input port."`
	Output      strictyaml.Raw `json:"output,omitzero" doc:"Expected value on the primary output port."`
	Error       *FixtureError  `json:"error,omitempty" doc:"Expected error instead of an output."`
	HTTP        []Exchange     `json:"http,omitempty" doc:"Recorded HTTP exchanges, in order."`
}

// FixtureError is the error a fixture expects.
type FixtureError struct {
	diag.Source `json:"-"`
	Kind        flowtype.ErrorKind `json:"kind" flowgen:"required" doc:"Expected error kind."`
	RetryAfter  flowtype.Duration  `json:"retryAfter,omitempty" doc:"Expected retry delay for RateLimited."`
}

// Exchange is one recorded HTTP request and its response.
type Exchange struct {
	diag.Source `json:"-"`
	Request     Request  `json:"request" flowgen:"required"`
	Response    Response `json:"response" flowgen:"required"`
}

// Request is a recorded HTTP request.
type Request struct {
	diag.Source `json:"-"`
	Method      string            `json:"method" flowgen:"required"`
	URL         string            `json:"url" flowgen:"required"`
	Headers     map[string]string `json:"headers,omitempty"`
	Body        strictyaml.Raw    `json:"body,omitzero"`
}

// Response is a recorded HTTP response.
type Response struct {
	diag.Source `json:"-"`
	Status      int               `json:"status,omitempty" doc:"HTTP status; required unless timeout is set."`
	Headers     map[string]string `json:"headers,omitempty"`
	Body        strictyaml.Raw    `json:"body,omitzero"`
	Timeout     bool              `json:"timeout,omitempty" doc:"The provider never answers: the request times out (no status)."`
}

// SchemaFiles lists, as sorted absolute paths, every JSON Schema file the
// spec's $refs reached while it was loaded: the files an artifact must carry
// for the spec to load again elsewhere.
func (s *Spec) SchemaFiles() []string { return s.schemaFiles }

// InputSchema returns the compiled schema of an input port, or nil.
func (s *Spec) InputSchema(port string) *jsonschema.Schema { return s.compiled["inputs/"+port] }

// OutputSchema returns the compiled schema of an output port, or nil.
func (s *Spec) OutputSchema(port string) *jsonschema.Schema { return s.compiled["outputs/"+port] }

// ParamsSchema returns the compiled params schema, or nil when none is declared.
func (s *Spec) ParamsSchema() *jsonschema.Schema { return s.compiled["params"] }

// PrimaryInputPort returns the port that key fields refer to: "in" if
// declared, else the only input port, else "".
func (s *Spec) PrimaryInputPort() string {
	if _, ok := s.Inputs[PrimaryInput]; ok {
		return PrimaryInput
	}
	if len(s.Inputs) == 1 {
		for name := range s.Inputs {
			return name
		}
	}
	return ""
}

// PrimaryOutputPort returns "out" if declared, else the only output port, else "".
func (s *Spec) PrimaryOutputPort() string {
	if _, ok := s.Outputs["out"]; ok {
		return "out"
	}
	if len(s.Outputs) == 1 {
		for name := range s.Outputs {
			return name
		}
	}
	return ""
}
