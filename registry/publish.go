package registry

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"mime/multipart"
	"net"
	"net/http"
	"os"
	"syscall"
	"time"

	"golang.org/x/mod/modfile"
	"golang.org/x/mod/module"

	"github.com/flowgen-dev/flowgen/artifact"
	"github.com/flowgen-dev/flowgen/connectorspec"
	"github.com/flowgen-dev/flowgen/internal/flowgenmod"
	"github.com/flowgen-dev/flowgen/registry/api"
	"github.com/flowgen-dev/flowgen/registry/blobstore"
	"github.com/flowgen-dev/flowgen/registry/meta"
)

// publish handles PUT /v1/connectors/{namespace}/{connector}/versions/{version}:
// a multipart/form-data body whose first part is the artifact manifest
// (JSON) and whose second is the zip, streamed into storage.
func (s *Server) publish(w http.ResponseWriter, r *http.Request, p *principal) (err error) {
	ctx := r.Context()
	k, err := key(r)
	if err != nil {
		return err
	}
	if p == nil {
		return &authError{http.StatusUnauthorized, "publishing needs a token"}
	}
	if !p.canPublish(k.Namespace) {
		return &authError{http.StatusForbidden, fmt.Sprintf("token %s may not publish to namespace %q", p.token.ID, k.Namespace)}
	}
	release, err := s.uploads.admit(p.token.ID, k.Namespace)
	if err != nil {
		w.Header().Set("Retry-After", "5")
		return err
	}
	defer release()
	defer func() { s.metrics.publishes.WithLabelValues(outcome(err)).Inc() }()
	mt, params, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if mt != "multipart/form-data" || params["boundary"] == "" {
		return api.CodeUnsupportedMedia.Errorf(
			"Content-Type %q: want multipart/form-data with a %q part then an %q part", r.Header.Get("Content-Type"), api.PartManifest, api.PartArtifact)
	}
	rc := http.NewResponseController(w)
	defer rc.SetReadDeadline(time.Time{})
	// The answer may come as late as the upload's deadline allows.
	rc.SetWriteDeadline(time.Now().Add(s.cfg.UploadDeadline + s.cfg.WriteTimeout))
	body := newUploadReader(http.MaxBytesReader(w, r.Body, s.cfg.MaxArtifactSize+maxManifestSize+1<<20), rc, s.cfg)
	mr := multipart.NewReader(body, params["boundary"])

	m, err := s.readManifestPart(mr, k)
	if err != nil {
		return err
	}
	existing, err := s.meta.GetVersion(ctx, k)
	replay := err == nil
	switch {
	case replay && existing.Digest != m.Digest:
		return &meta.ConflictError{Key: k, Stored: existing.Digest, Offered: m.Digest}
	case replay && s.blobsPresent(ctx, existing):
		return writeJSON(w, http.StatusOK, existing) // a replayed upload
	case replay:
		// A replay of a version whose stored bytes are gone: store them
		// again, so that the version can be served.
		s.log.Warn("a replayed upload restores missing blobs", slog.String("version", k.String()))
	case !errors.Is(err, meta.ErrNotFound):
		return storageErr(err)
	default:
		if err := s.checkModulePrefix(k.Namespace, m.Module); err != nil {
			return err
		}
		if err := s.checkModuleOwner(ctx, k, m.Module); err != nil {
			return err
		}
	}

	part, err := mr.NextPart()
	if err != nil {
		return partErr(err, api.PartArtifact)
	}
	if part.FormName() != api.PartArtifact {
		return api.CodeBadUpload.Errorf("second part is %q, want %q (the zip)", part.FormName(), api.PartArtifact)
	}
	// Each blob is pinned before it is stored, so garbage collection keeps
	// it until the version that names it is committed; no lock is held
	// while the client sends. A failed upload removes what it stored at
	// once, unless another upload of the same bytes holds it.
	st := &staging{s: s}
	committed := false
	defer func() { st.end(committed) }()
	zd, err := st.put(ctx, part, m.Digest, m.Size)
	switch {
	case errors.Is(err, blobstore.ErrTooLarge):
		return api.CodeTooLarge.Errorf("the artifact part is larger than the manifest's size, %d bytes", m.Size)
	case errors.Is(err, os.ErrDeadlineExceeded):
		return err
	case err != nil:
		var mismatch *blobstore.DigestMismatchError
		var maxBytes *http.MaxBytesError
		if errors.As(err, &mismatch) || errors.As(err, &maxBytes) {
			return err
		}
		if clientFault(err) {
			return api.CodeBadUpload.Errorf("the artifact part ended early: %v", err)
		}
		return storageErr(err)
	case zd.Size != m.Size:
		return api.CodeBadUpload.Errorf("the artifact part has %d bytes, the manifest says %d", zd.Size, m.Size)
	}
	if _, err := mr.NextPart(); err != io.EOF {
		return api.CodeBadUpload.Errorf("unexpected content after the %q part", api.PartArtifact)
	}
	zipData, err := s.readBlob(ctx, zd.Digest)
	if err != nil {
		return storageErr(err)
	}
	files, err := artifact.Check(&artifact.Artifact{Zip: zipData, Manifest: m})
	if err != nil {
		return api.CodeBadArtifact.Errorf("%v", err)
	}
	if _, ok := files[connectorspec.FileName]; !ok {
		return api.CodeBadArtifact.Errorf("the artifact has no connector.yaml at the module root")
	}
	if err := s.checkFlowgenRequirement(files["go.mod"]); err != nil {
		return err
	}
	mj, err := m.JSON()
	if err != nil {
		return err
	}
	if replay {
		// Restore only what the version's record names: the zip, and the
		// manifest when this one is the one it names.
		if d := sha256Digest(mj); d == existing.Blobs[api.FileManifest] {
			if _, err := st.put(ctx, bytes.NewReader(mj), d, int64(len(mj))); err != nil {
				return storageErr(err)
			}
		}
		committed = true // the version's record already names them
		return writeJSON(w, http.StatusOK, existing)
	}
	md, err := st.put(ctx, bytes.NewReader(mj), sha256Digest(mj), int64(len(mj)))
	if err != nil {
		return storageErr(err)
	}
	now := s.now()
	v := meta.Version{
		Namespace: k.Namespace, Connector: k.Connector, Version: k.Version,
		Module: m.Module, ModuleVersion: m.Version, Digest: m.Digest, Size: m.Size,
		State: meta.Pending, Progress: "waiting for certification",
		Blobs:     map[string]string{api.FileArtifact: zd.Digest, api.FileManifest: md.Digest},
		Publisher: p.token.Name, Created: now, Updated: now,
	}
	labels(&v, m.Spec)
	stored, created, err := s.meta.CreateVersion(ctx, v, s.auditEvent(p, "publish", k, "digest %s, %d bytes", m.Digest, m.Size))
	committed = err == nil
	if err != nil {
		var conflict *meta.ConflictError
		if errors.As(err, &conflict) {
			return err
		}
		return storageErr(err)
	}
	if !created {
		return writeJSON(w, http.StatusOK, stored)
	}
	s.audited()
	s.Wake()
	w.Header().Set("Location", "/v1/connectors/"+k.Namespace+"/"+k.Connector+"/versions/"+k.Version)
	return writeJSON(w, http.StatusAccepted, stored)
}

// blobsPresent reports whether every blob of v is stored.
func (s *Server) blobsPresent(ctx context.Context, v meta.Version) bool {
	for _, d := range v.Blobs {
		if _, err := s.blobs.Stat(ctx, d); err != nil {
			return false
		}
	}
	return true
}

// clientFault reports whether a failure to store a body came from the
// client (a body that ended early or a connection that broke), not from
// storage.
func clientFault(err error) bool {
	return errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) || errors.Is(err, context.Canceled) ||
		errors.Is(err, net.ErrClosed) || errors.Is(err, syscall.ECONNRESET)
}

// readManifestPart reads and checks the first part against the request path.
func (s *Server) readManifestPart(mr *multipart.Reader, k meta.Key) (artifact.Manifest, error) {
	var m artifact.Manifest
	part, err := mr.NextPart()
	if err != nil {
		return m, partErr(err, api.PartManifest)
	}
	if part.FormName() != api.PartManifest {
		return m, api.CodeBadUpload.Errorf("first part is %q, want %q (the artifact manifest, JSON)", part.FormName(), api.PartManifest)
	}
	raw, err := io.ReadAll(io.LimitReader(part, maxManifestSize+1))
	if err != nil {
		return m, partErr(err, api.PartManifest)
	}
	if len(raw) > maxManifestSize {
		return m, api.CodeTooLarge.Errorf("the manifest part is larger than %d bytes", maxManifestSize)
	}
	if err := decodeStrict(bytes.NewReader(raw), &m); err != nil {
		return m, api.CodeBadManifest.Errorf("manifest: %v", err)
	}
	bad := func(format string, args ...any) error {
		return api.CodeBadManifest.Errorf("manifest: "+format, args...)
	}
	switch {
	case m.Format != artifact.Format:
		return m, bad("format %q, want %q", m.Format, artifact.Format)
	case m.Connector != k.Connector:
		return m, bad("connector %q, but the upload is for %q", m.Connector, k.Connector)
	case m.ConnectorVersion != k.Version:
		return m, bad("connector_version %q, but the upload is for %q", m.ConnectorVersion, k.Version)
	case m.Version != "v"+k.Version:
		return m, bad("module version %q, want %q", m.Version, "v"+k.Version)
	case m.Size <= 0:
		return m, bad("size %d", m.Size)
	case m.Size > s.cfg.MaxArtifactSize:
		return m, api.CodeTooLarge.Errorf("the artifact is %d bytes; this registry takes at most %d", m.Size, s.cfg.MaxArtifactSize)
	case len(m.Spec) == 0:
		return m, bad("no spec")
	}
	if _, err := blobstore.CheckDigest(m.Digest); err != nil {
		return m, bad("%v", err)
	}
	if err := module.Check(m.Module, m.Version); err != nil {
		return m, bad("%v", err)
	}
	return m, nil
}

// checkModuleOwner refuses a module path that another connector already
// publishes: the Go proxy must map a module to one connector.
func (s *Server) checkModuleOwner(ctx context.Context, k meta.Key, mod string) error {
	vs, err := s.meta.Search(ctx, meta.Query{Module: mod, States: allStates})
	if err != nil {
		return storageErr(err)
	}
	for _, v := range vs {
		if v.Namespace != k.Namespace || v.Connector != k.Connector {
			return api.CodeModuleTaken.Errorf("module %s is already published as %s/%s", mod, v.Namespace, v.Connector)
		}
	}
	return nil
}

var allStates = []meta.State{meta.Pending, meta.Certifying, meta.Certified, meta.Rejected}

// labels copies what the spec declares into the version for search. Pull
// policies do not trust these; they read the signed evidence.
func labels(v *meta.Version, spec json.RawMessage) {
	var s struct {
		Provider     string   `json:"provider"`
		Summary      string   `json:"summary"`
		Effects      string   `json:"effects"`
		Determinism  string   `json:"determinism"`
		Egress       []string `json:"egress"`
		Capabilities []struct {
			Name string `json:"name"`
		} `json:"capabilities"`
	}
	if json.Unmarshal(spec, &s) != nil {
		return
	}
	v.Provider, v.Summary, v.Effects, v.Determinism, v.Egress = s.Provider, s.Summary, s.Effects, s.Determinism, s.Egress
	v.Capabilities = nil
	for _, c := range s.Capabilities {
		v.Capabilities = append(v.Capabilities, c.Name)
	}
}

func partErr(err error, want string) error {
	var maxBytes *http.MaxBytesError
	var limit *api.Error // the upload's limits (uploadReader)
	if errors.As(err, &maxBytes) || errors.Is(err, os.ErrDeadlineExceeded) {
		return err
	}
	if errors.As(err, &limit) {
		return limit
	}
	return api.CodeBadUpload.Errorf("reading the %q part: %v", want, err)
}

// storageErr is a failure of the registry's storage: 503, try again.
func storageErr(err error) error {
	var ae *api.Error
	var tampered *TamperedError
	if errors.As(err, &ae) || errors.As(err, &tampered) || errors.Is(err, os.ErrDeadlineExceeded) {
		return err
	}
	return api.CodeStorageUnavailable.Errorf("%s", err)
}

func outcome(err error) string {
	var ae *api.Error
	switch {
	case err == nil:
		return "ok"
	case errors.As(err, &ae) && ae.Status >= 500:
		return "error"
	case errors.As(err, &ae):
		return "rejected"
	}
	return "error"
}

// auditEvent is the audit log's record of p doing action on k, which the
// store appends in the commit of the change it records.
func (s *Server) auditEvent(p *principal, action string, k meta.Key, format string, args ...any) meta.Event {
	return meta.Event{Time: s.now(), Actor: p.name(), Action: action, Subject: k.String(), Detail: fmt.Sprintf(format, args...)}
}

// audited wakes the webhook sender after a commit appended audit events.
func (s *Server) audited() {
	select {
	case s.webhookWake <- struct{}{}:
	default:
	}
}

// checkFlowgenRequirement refuses an artifact whose go.mod requires a
// flowgen other than the one this registry certifies with and serves:
// it would be certified against code its consumers never get.
func (s *Server) checkFlowgenRequirement(gomod []byte) error {
	if s.flowgen == nil {
		return nil
	}
	mf, err := modfile.ParseLax("go.mod", gomod, nil)
	if err != nil {
		return api.CodeBadArtifact.Errorf("go.mod: %v", err)
	}
	for _, r := range mf.Require {
		if r.Mod.Path == flowgenmod.Path && r.Mod.Version != s.flowgen.Version {
			return api.CodeFlowgenVersion.Errorf(
				"the artifact requires %s %s, but this registry certifies with and serves %s: package it against that flowgen (the same checkout, or GOPROXY=<registry>/go and go get %s@%s), then publish again",
				flowgenmod.Path, r.Mod.Version, s.flowgen.Version, flowgenmod.Path, s.flowgen.Version)
		}
	}
	return nil
}
