// Package registry is registryd's HTTP API: publish connector artifacts,
// certify them in the background with the registry's own key, and serve
// certified versions to platform teams as JSON, as signed evidence and
// through the Go module proxy protocol.
//
// Guarantees:
//   - a version is visible to pulls only once the registry itself has
//     certified the uploaded bytes and signed the evidence;
//   - versions are write-once: the same digest again is a no-op, another
//     digest is 409 Conflict;
//   - an upload that fails for any reason (bad input, size, digest, storage)
//     leaves no blob and no metadata behind;
//   - certification is durable: versions left pending or certifying by a
//     stopped registry are certified when it starts again;
//   - every blob served is checked against its digest first; a modified
//     blob is a loud 500, never silently served.
//
// The wire format is in docs/registry-api.md and docs/registry-openapi.yaml.
package registry

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/Masterminds/semver/v3"

	"github.com/flowgen-dev/flowgen/internal/flowgenmod"
	"github.com/flowgen-dev/flowgen/internal/webui"
	"github.com/flowgen-dev/flowgen/registry/api"
	"github.com/flowgen-dev/flowgen/registry/blobstore"
	"github.com/flowgen-dev/flowgen/registry/meta"
	"github.com/flowgen-dev/flowgen/signing/signer"
)

// Config assembles a registry.
type Config struct {
	Meta  meta.Store
	Blobs blobstore.Store
	// Signer is the registry's key; it signs the evidence of every version
	// it certifies.
	Signer *signer.Signer
	Logger *slog.Logger
	// MaxArtifactSize bounds an uploaded zip (default DefaultMaxArtifactSize).
	MaxArtifactSize int64
	// WorkDir is where certification unpacks uploads (default the system
	// temporary directory).
	WorkDir string
	// FlowgenModule, when set, is a directory holding the flowgen module
	// that certification builds connectors against (a go.work replace).
	// The registry then serves it through its Go module proxy at its
	// content-derived version (flowgenmod), signed, so that pulled
	// connectors resolve it with the stock go command, and refuses uploads
	// built against another flowgen.
	FlowgenModule string
	// LocalAdminToken, when set, is an admin credential that lives only in
	// this process and in the endpoint file registryd writes into its data
	// directory (mode 0600), so that registryd token and gc on the same
	// machine reach a running registry without a stored token.
	LocalAdminToken string
	// Worker is the command of the certification worker, the process that
	// certifies an upload without access to Signer: the registry runs it
	// with WorkerCommand appended ([os.Executable()] for registryd, which
	// dispatches registryd certify-worker to WorkerMain).
	Worker []string
	// FixtureDatabase is a postgres:// URL of a database that db
	// connectors' fixtures run in during certification (each run as a
	// throwaway role and schema); without it such connectors are rejected.
	FixtureDatabase string
	// BodyReadTimeout is how long an upload may go without sending a byte
	// before it is cut off (default 30s): slow-loris uploads do not hold a
	// connection forever.
	BodyReadTimeout time.Duration
	// Webhooks receive the registry's events (see Webhook).
	Webhooks []Webhook
	// WebhookRetry is the first delay before retrying a failed delivery
	// (default 1 s); WebhookPoll how often an idle deliverer looks for new
	// events (default 5 s); WebhookSettle how old an event must be before it
	// is sent (default 2 s; negative for none), so that appends still
	// committing come first.
	WebhookRetry, WebhookPoll, WebhookSettle time.Duration
	// MetricsElsewhere leaves /metrics off the API listener: the caller
	// serves MetricsHandler on an address of its own. Otherwise /metrics on
	// the API needs a token with the metrics (or admin) scope.
	MetricsElsewhere bool
	// WriteTimeout bounds writing one response (default 10 min, enough
	// for the largest artifact over a slow link).
	WriteTimeout time.Duration
	// MaxConcurrentUploads bounds the uploads received at once (default
	// DefaultMaxConcurrentUploads); one more is refused with 503 busy.
	// MaxUploadsPerNamespace (default half of it) and MaxUploadsPerToken
	// (default half of that) bound one tenant's, below it, so that no
	// tenant holds every slot; one more is refused with 429
	// too_many_uploads. New refuses caps that would let one namespace take
	// every slot.
	MaxConcurrentUploads, MaxUploadsPerNamespace, MaxUploadsPerToken int
	// UploadDeadline is how long one upload may take in all (default
	// DefaultUploadDeadline); MinUploadRate the bytes a second it must
	// average once BodyReadTimeout has passed (default
	// DefaultMinUploadRate). An upload over either is cut off with 408.
	UploadDeadline time.Duration
	MinUploadRate  int64
	// GCGrace is how long a blob no version refers to is kept (default
	// DefaultGCGrace); JanitorInterval how often RunJanitor sweeps and
	// collects garbage (0: only the sweep at start).
	GCGrace         time.Duration
	JanitorInterval time.Duration
	// RetryInterval is how long the certifier waits after a storage error
	// before trying a version again (default 10s).
	RetryInterval time.Duration
	// ModulePrefixes gives namespaces module path prefixes beyond the
	// artifact.ModulePrefix/NAMESPACE each owns (prefixes.go): only a
	// namespace that owns a module path may publish under it. New refuses
	// prefixes that overlap another namespace's.
	ModulePrefixes map[string][]string
	// CertifyWorkers is how many versions are certified at once (default
	// the processors, at most DefaultMaxCertifyWorkers; New refuses more
	// than the processors). Versions are taken fairly across namespaces
	// (scheduler.go).
	CertifyWorkers int
	// CertifyTimeout bounds one certification, start to end (default
	// DefaultCertifyTimeout): past it the version is rejected.
	CertifyTimeout time.Duration
	// MaxFixtures and SandboxBudget bound one certification's fixtures and
	// the time its connector's code runs (defaults certify's).
	MaxFixtures   int
	SandboxBudget time.Duration
	// Now is the clock (default time.Now).
	Now func() time.Time
}

// Defaults of the certifier (Config).
const (
	DefaultMaxCertifyWorkers = 4
	DefaultCertifyTimeout    = 20 * time.Minute
)

// DefaultMaxArtifactSize is the default bound on an uploaded artifact zip.
const DefaultMaxArtifactSize = 64 << 20

// maxManifestSize bounds the manifest part of an upload; maxJSONBody any
// other JSON request body.
const (
	maxManifestSize = 8 << 20
	maxJSONBody     = 64 << 10
)

// Server is a registry. Its Handler serves the API; RunCertifier certifies
// uploads in the background.
type Server struct {
	cfg     Config
	meta    meta.Store
	blobs   blobstore.Store
	log     *slog.Logger
	pubKey  []byte
	wake    chan struct{}
	metrics *metrics
	mux     *http.ServeMux
	// site renders the catalogue pages (ui.go).
	site *webui.Site
	// policyCache holds policy verdicts by policy and evidence digests.
	policyCache sync.Map
	// pins are the blobs uploads and certifications are about to commit
	// (pins.go); garbage collection never removes them.
	pins pins
	// work lists the certification work directories in use.
	workMu sync.Mutex
	work   map[string]bool
	// uploads admits the uploads being received (admission.go).
	uploads *admission
	// sched hands waiting versions to certification workers.
	sched *scheduler
	// uiSessions are the catalogue's signed-in browsers.
	uiSessions uiSessions
	// discards are failed uploads' blobs waiting to be removed (gc.go).
	discards discardQueue
	// webhookWake tells idle webhook deliverers that an event was added.
	webhookWake chan struct{}
	// patterns lists the routes, for the API documentation test.
	patterns []string
	// flowgen is the runtime module served (nil without FlowgenModule) and
	// flowgenSig the signature of its zip.
	flowgen    *flowgenmod.Module
	flowgenSig []byte
}

// New checks cfg and builds a Server.
func New(cfg Config) (*Server, error) {
	if cfg.Meta == nil || cfg.Blobs == nil || cfg.Signer == nil || len(cfg.Worker) == 0 {
		return nil, errors.New("registry: Meta, Blobs, Signer and Worker are required")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewJSONHandler(os.Stderr, nil))
	}
	if cfg.MaxArtifactSize <= 0 {
		cfg.MaxArtifactSize = DefaultMaxArtifactSize
	}
	if cfg.WorkDir == "" {
		cfg.WorkDir = os.TempDir()
	}
	if cfg.BodyReadTimeout <= 0 {
		cfg.BodyReadTimeout = 30 * time.Second
	}
	if cfg.WriteTimeout <= 0 {
		cfg.WriteTimeout = 10 * time.Minute
	}
	for _, h := range cfg.Webhooks {
		if err := checkWebhook(h); err != nil {
			return nil, fmt.Errorf("registry: %w", err)
		}
	}
	if cfg.WebhookRetry <= 0 {
		cfg.WebhookRetry = time.Second
	}
	if cfg.WebhookPoll <= 0 {
		cfg.WebhookPoll = 5 * time.Second
	}
	switch {
	case cfg.WebhookSettle < 0: // none
		cfg.WebhookSettle = 0
	case cfg.WebhookSettle == 0:
		cfg.WebhookSettle = 2 * time.Second
	}
	if err := checkUploadLimits(&cfg); err != nil {
		return nil, fmt.Errorf("registry: %w", err)
	}
	if err := checkModulePrefixes(cfg.ModulePrefixes); err != nil {
		return nil, fmt.Errorf("registry: %w", err)
	}
	if cfg.RetryInterval <= 0 {
		cfg.RetryInterval = 10 * time.Second
	}
	switch cpus := runtime.NumCPU(); {
	case cfg.CertifyWorkers <= 0:
		cfg.CertifyWorkers = min(cpus, DefaultMaxCertifyWorkers)
	case cfg.CertifyWorkers > cpus:
		return nil, fmt.Errorf("registry: CertifyWorkers %d exceeds the %d processors: certification is CPU-bound, and more workers only slow each one", cfg.CertifyWorkers, cpus)
	}
	if cfg.CertifyTimeout <= 0 {
		cfg.CertifyTimeout = DefaultCertifyTimeout
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	pub, err := cfg.Signer.PublicKey()
	if err != nil {
		return nil, fmt.Errorf("registry: public key: %w", err)
	}
	s := &Server{
		cfg: cfg, meta: cfg.Meta, blobs: cfg.Blobs, log: cfg.Logger, pubKey: pub,
		wake: make(chan struct{}, 1), metrics: newMetrics(), work: map[string]bool{},
		uploads: newAdmission(cfg.MaxConcurrentUploads, cfg.MaxUploadsPerToken, cfg.MaxUploadsPerNamespace), webhookWake: make(chan struct{}, 1),
		sched: newScheduler(),
	}
	if cfg.FlowgenModule != "" {
		if s.flowgen, err = flowgenmod.Build(context.Background(), cfg.FlowgenModule); err != nil {
			return nil, fmt.Errorf("registry: %w", err)
		}
		if s.flowgenSig, err = cfg.Signer.Sign(s.flowgen.Zip); err != nil {
			return nil, fmt.Errorf("registry: sign the flowgen module: %w", err)
		}
		s.log.Info("serving the flowgen module", slog.String("module", flowgenmod.Path), slog.String("version", s.flowgen.Version), slog.String("dir", s.flowgen.Dir))
	}
	if err := s.routes(); err != nil {
		return nil, fmt.Errorf("registry: %w", err)
	}
	return s, nil
}

func (s *Server) now() time.Time { return s.cfg.Now().UTC() }

// UploadsInFlight is the number of uploads being received now.
func (s *Server) UploadsInFlight() int { return s.uploads.inFlight() }

// Handler serves the API, the Go module proxy, the catalogue pages (/ui/),
// health and metrics.
func (s *Server) Handler() http.Handler { return s.mux }

// HTTPServer is the http.Server to serve Handler with: request headers
// must arrive within 10 s; a request body is read under Config's
// BodyReadTimeout between reads (uploads) or within a minute in all;
// a response must be written within Config.WriteTimeout (default 10 min);
// an idle connection is closed after 2 min.
func (s *Server) HTTPServer() *http.Server {
	return &http.Server{
		Handler:           s.Handler(),
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       time.Minute,
		WriteTimeout:      s.cfg.WriteTimeout,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
	}
}

func (s *Server) routes() error {
	m := http.NewServeMux()
	const v = "/v1/connectors/{namespace}/{connector}/versions/{version}"
	s.handle(m, "GET /v1/public-key", s.publicKey)
	s.handle(m, "GET /v1/flowgen-module", s.flowgenModule)
	s.handle(m, "GET /v1/connectors", s.search)
	s.handle(m, "GET /v1/connectors/{namespace}/{connector}/versions", s.listVersions)
	s.handle(m, "PUT "+v, s.publish)
	s.handle(m, "GET "+v, s.getVersion)
	s.handle(m, "GET "+v+"/files/{file}", s.getFile)
	s.handle(m, "POST "+v+"/deprecate", s.deprecate)
	s.handle(m, "POST "+v+"/yank", s.yank)
	s.handle(m, "GET /v1/audit", s.audit)
	s.handle(m, "POST /v1/admin/tokens", s.adminCreateToken)
	s.handle(m, "GET /v1/admin/tokens", s.adminListTokens)
	s.handle(m, "POST /v1/admin/tokens/{id}/revoke", s.adminRevokeToken)
	s.handle(m, "POST /v1/admin/gc", s.adminGC)
	s.handle(m, "GET /go/{path...}", s.goProxy)
	// Health checks ignore credentials: a probe sending a stale token is
	// still answered.
	s.handle(m, "GET /healthz", func(w http.ResponseWriter, r *http.Request, _ *principal) error {
		return writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
	})
	s.handle(m, "GET /readyz", s.ready)
	if !s.cfg.MetricsElsewhere {
		s.handle(m, "GET /metrics", func(w http.ResponseWriter, r *http.Request, p *principal) error {
			switch {
			case p == nil:
				return &authError{http.StatusUnauthorized, "metrics need a token with the metrics scope (or serve them on their own address)"}
			case !p.can(ScopeMetrics):
				return &authError{http.StatusForbidden, fmt.Sprintf("token %s has no metrics scope", p.token.ID)}
			}
			s.metrics.handler().ServeHTTP(w, r)
			return nil
		})
	}
	if err := s.uiRoutes(m); err != nil {
		return err
	}
	s.mux = m
	return nil
}

// anonymousRoutes are served without looking at credentials.
var anonymousRoutes = map[string]bool{"GET /healthz": true, "GET /readyz": true}

// MetricsHandler serves the Prometheus metrics without authentication, for
// a listener of their own (Config.MetricsElsewhere).
func (s *Server) MetricsHandler() http.Handler { return s.metrics.handler() }

// handlerFunc is an API handler: it gets the authenticated caller (nil when
// anonymous) and returns an error that becomes the response.
type handlerFunc func(w http.ResponseWriter, r *http.Request, p *principal) error

func (s *Server) handle(m *http.ServeMux, pattern string, h handlerFunc) {
	s.patterns = append(s.patterns, pattern)
	m.HandleFunc(pattern, func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		body := &eofReader{r: r.Body}
		r.Body = body
		rec := &recorder{ResponseWriter: w, status: http.StatusOK, req: r, body: body}
		var p *principal
		var err error
		if _, anon := anonymousRoutes[pattern]; !anon {
			p, err = s.authenticate(r.Context(), r)
		}
		if err == nil {
			err = h(rec, r, p)
		}
		if err != nil {
			s.writeError(rec, r, err)
		}
		elapsed := time.Since(start)
		s.metrics.observe(pattern, rec.status, elapsed)
		s.log.LogAttrs(r.Context(), slog.LevelInfo, "request",
			slog.String("method", r.Method), slog.String("path", r.URL.Path), slog.String("route", pattern),
			slog.Int("status", rec.status), slog.Int64("bytes", rec.bytes), slog.Duration("duration", elapsed),
			slog.String("caller", p.name()), slog.String("remote", r.RemoteAddr))
	})
}

// recorder remembers the status and size of a response, and closes the
// connection of a request whose body it answers before reading to the end.
type recorder struct {
	http.ResponseWriter
	status  int
	bytes   int64
	written bool
	req     *http.Request
	body    *eofReader
}

func (r *recorder) WriteHeader(code int) {
	if !r.written {
		r.status, r.written = code, true
		r.abandonBody()
	}
	r.ResponseWriter.WriteHeader(code)
}

func (r *recorder) Write(b []byte) (int, error) {
	if !r.written {
		r.written = true
		r.abandonBody()
	}
	n, err := r.ResponseWriter.Write(b)
	r.bytes += int64(n)
	return n, err
}

// abandonBody: an answer given before the request body ended (401, 403,
// 409, 413, a replay, a bad manifest) first drains what is left of the body,
// within drainLimit bytes and drainTime, so that a client still writing
// reads the answer instead of a connection reset. A body longer than that,
// or one that stalls, is given up on: the connection closes and the read
// deadline expires at once, so a stalled client holds nothing.
func (r *recorder) abandonBody() {
	if r.body.eof || (r.req.ContentLength == 0 && len(r.req.TransferEncoding) == 0) {
		return
	}
	rc := http.NewResponseController(r.ResponseWriter)
	rc.SetReadDeadline(time.Now().Add(drainTime))
	io.CopyN(io.Discard, r.body, drainLimit)
	if r.body.eof {
		rc.SetReadDeadline(time.Time{})
		return
	}
	r.Header().Set("Connection", "close")
	rc.SetReadDeadline(time.Now())
}

// drainLimit and drainTime bound what abandonBody reads of an unwanted body.
const (
	drainLimit = 2 << 20
	drainTime  = time.Second
)

// eofReader remembers whether the body was read to its end.
type eofReader struct {
	r   io.ReadCloser
	eof bool
}

func (e *eofReader) Read(p []byte) (int, error) {
	n, err := e.r.Read(p)
	if err == io.EOF {
		e.eof = true
	}
	return n, err
}

func (e *eofReader) Close() error { return e.r.Close() }

// Unwrap lets http.ResponseController reach the connection (read deadlines).
func (r *recorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }

// writeError maps err to a status and writes {"error": {...}}.
func (s *Server) writeError(w *recorder, r *http.Request, err error) {
	var (
		ae       *api.Error
		auth     *authError
		conflict *meta.ConflictError
		mismatch *blobstore.DigestMismatchError
		maxBytes *http.MaxBytesError
		tampered *TamperedError
	)
	switch {
	case errors.As(err, &ae):
	case errors.As(err, &tampered):
		ae = api.CodeTampered.Errorf("%s", tampered.Error())
	case errors.As(err, &auth):
		code := api.CodeUnauthorized
		if auth.status == http.StatusForbidden {
			code = api.CodeForbidden
		} else {
			w.Header().Set("WWW-Authenticate", `Bearer realm="flowgen registry"`)
		}
		ae = code.Errorf("%s", auth.msg)
	case errors.As(err, &conflict):
		ae = api.CodeConflict.Errorf("%s", conflict.Error())
	case errors.As(err, &mismatch):
		ae = api.CodeDigestMismatch.Errorf("%s", mismatch.Error())
	case errors.Is(err, blobstore.ErrTooLarge), errors.As(err, &maxBytes):
		ae = api.CodeTooLarge.Errorf("%v", err)
	case errors.Is(err, meta.ErrNotFound), errors.Is(err, blobstore.ErrNotFound):
		ae = api.CodeNotFound.Errorf("%v", err)
	case errors.Is(err, os.ErrDeadlineExceeded):
		ae = api.CodeTimeout.Errorf("the request body stalled for more than %s", s.cfg.BodyReadTimeout)
	default:
		s.log.ErrorContext(r.Context(), "internal error", slog.String("path", r.URL.Path), slog.Any("error", err))
		ae = api.CodeInternal.Errorf("%v", err)
	}
	if w.written {
		return // too late to change the response; the log has it
	}
	if ae.Status == http.StatusRequestTimeout || ae.Status == http.StatusRequestEntityTooLarge {
		w.Header().Set("Connection", "close")
	}
	writeJSON(w, ae.Status, map[string]*api.Error{"error": ae})
}

func writeJSON(w http.ResponseWriter, status int, v any) error {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return err
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, err := w.Write(b.Bytes())
	return err
}

// readJSON decodes a small JSON body strictly.
func readJSON(w http.ResponseWriter, r *http.Request, v any) error {
	if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		return api.CodeUnsupportedMedia.Errorf("Content-Type %q: want application/json", ct)
	}
	if err := decodeStrict(http.MaxBytesReader(w, r.Body, maxJSONBody), v); err != nil {
		var maxBytes *http.MaxBytesError
		if errors.As(err, &maxBytes) {
			return api.CodeTooLarge.Errorf("JSON body larger than %d bytes", maxJSONBody)
		}
		return api.CodeBadJSON.Errorf("request body: %v", err)
	}
	return nil
}

// decodeStrict decodes exactly one JSON value with no unknown fields and
// nothing after it.
func decodeStrict(r io.Reader, v any) error {
	dec := json.NewDecoder(r)
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if _, err := dec.Token(); err != io.EOF {
		return errors.New("unexpected data after the JSON value")
	}
	return nil
}

var (
	namespaceRE = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$`)
	connectorRE = regexp.MustCompile(`^[a-z0-9]([a-z0-9_.-]{0,126}[a-z0-9])?$`)
)

// checkName validates a namespace or connector id: lowercase letters,
// digits and (connectors) dots, dashes and underscores, nothing that
// could be a path.
func checkName(kind, name string) error {
	re, want := connectorRE, "lowercase letters and digits with . _ - inside, at most 128 characters"
	if kind == "namespace" {
		re, want = namespaceRE, "lowercase letters and digits with - inside, at most 63 characters"
	}
	if !re.MatchString(name) || strings.Contains(name, "..") {
		return api.CodeBadName.Errorf("%s %q: want %s", kind, name, want)
	}
	return nil
}

// key validates the namespace, connector and version of a request path.
func key(r *http.Request) (meta.Key, error) {
	k := meta.Key{Namespace: r.PathValue("namespace"), Connector: r.PathValue("connector"), Version: r.PathValue("version")}
	if err := checkName("namespace", k.Namespace); err != nil {
		return k, err
	}
	if err := checkName("connector", k.Connector); err != nil {
		return k, err
	}
	if k.Version != "" {
		v, err := semver.StrictNewVersion(k.Version)
		if err != nil {
			return k, api.CodeBadVersion.Errorf("version %q: want a semantic version such as 1.2.3 (no v prefix)", k.Version)
		}
		if v.Metadata() != "" {
			return k, api.CodeBadVersion.Errorf("version %q has build metadata: %s has the same precedence as %s and the go command cannot fetch it; publish %s, or a new version",
				k.Version, k.Version, strings.SplitN(k.Version, "+", 2)[0], strings.SplitN(k.Version, "+", 2)[0])
		}
	}
	return k, nil
}

func sha256Digest(b []byte) string {
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// readBlob reads a whole blob and checks it against its digest: a blob
// changed in storage is an error, never served.
func (s *Server) readBlob(ctx context.Context, digest string) ([]byte, error) {
	rc, d, err := s.blobs.Open(ctx, digest)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	limit := max(s.cfg.MaxArtifactSize, maxManifestSize)
	buf := bytes.NewBuffer(make([]byte, 0, min(d.Size, limit)+bytes.MinRead))
	if _, err := buf.ReadFrom(io.LimitReader(rc, limit+1)); err != nil {
		return nil, fmt.Errorf("read blob %s: %w", digest, err)
	}
	b := buf.Bytes()
	if got := sha256Digest(b); got != digest || int64(len(b)) != d.Size {
		s.metrics.tampered.Inc()
		s.log.ErrorContext(ctx, "stored blob does not match its digest: storage was modified", slog.String("digest", digest), slog.String("content", got))
		return nil, &TamperedError{Digest: digest, Got: got}
	}
	return b, nil
}

// TamperedError is a stored blob whose content no longer has its digest.
type TamperedError struct{ Digest, Got string }

func (e *TamperedError) Error() string {
	return fmt.Sprintf("stored blob %s now hashes to %s: storage was modified after publishing; refusing to serve it", e.Digest, e.Got)
}

func (s *Server) publicKey(w http.ResponseWriter, _ *http.Request, _ *principal) error {
	w.Header().Set("Content-Type", "application/x-pem-file")
	_, err := w.Write(s.pubKey)
	return err
}

func (s *Server) ready(w http.ResponseWriter, r *http.Request, _ *principal) error {
	ctx, cancel := context.WithTimeout(r.Context(), 5*time.Second)
	defer cancel()
	problems := map[string]string{}
	if _, err := s.meta.Audit(ctx, 1); err != nil {
		problems["metadata"] = err.Error()
	}
	if _, err := s.blobs.Stat(ctx, "sha256:"+strings.Repeat("0", 64)); err != nil && !errors.Is(err, blobstore.ErrNotFound) {
		problems["blobs"] = err.Error()
	}
	if len(problems) > 0 {
		return writeJSON(w, http.StatusServiceUnavailable, map[string]any{"status": "unavailable", "problems": problems})
	}
	return writeJSON(w, http.StatusOK, map[string]string{"status": "ready"})
}
