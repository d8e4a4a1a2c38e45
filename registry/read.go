package registry

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/flowgen-dev/flowgen/registry/api"
	"github.com/flowgen-dev/flowgen/registry/meta"
)

// needPull fails unless the caller may read.
func needPull(p *principal) error {
	if p == nil {
		return &authError{http.StatusUnauthorized, "reading the registry needs a token (scope pull)"}
	}
	if !p.canPull() {
		return &authError{http.StatusForbidden, fmt.Sprintf("token %s has no pull scope", p.token.ID)}
	}
	return nil
}

// search handles GET /v1/connectors?q=&namespace=&connector=&provider=&effects=&determinism=&capability=&module=&state=.
func (s *Server) search(w http.ResponseWriter, r *http.Request, p *principal) error {
	if err := needPull(p); err != nil {
		return err
	}
	qv := r.URL.Query()
	q := meta.Query{
		Text: qv.Get("q"), Namespace: qv.Get("namespace"), Connector: qv.Get("connector"), Provider: qv.Get("provider"),
		Effects: qv.Get("effects"), Determinism: qv.Get("determinism"), Capability: qv.Get("capability"), Module: qv.Get("module"),
	}
	for _, st := range qv["state"] {
		for part := range strings.SplitSeq(st, ",") {
			state := meta.State(part)
			if !slices.Contains(allStates, state) {
				return api.CodeBadQuery.Errorf("state %q: want pending, certifying, certified or rejected", part)
			}
			q.States = append(q.States, state)
		}
	}
	vs, err := s.meta.Search(r.Context(), q)
	if err != nil {
		return storageErr(err)
	}
	vs = slices.DeleteFunc(vs, func(v meta.Version) bool { return !p.mayInspect(v) })
	if vs, err = s.filterPullable(r, p, vs); err != nil {
		return err
	}
	if limit, err := strconv.Atoi(qv.Get("limit")); err == nil && limit > 0 && limit < len(vs) {
		vs = vs[:limit]
	}
	return writeJSON(w, http.StatusOK, api.SearchResult{Versions: orEmpty(vs)})
}

// listVersions handles GET /v1/connectors/{namespace}/{connector}/versions:
// every state for the namespace's publishers, certified ones for others.
func (s *Server) listVersions(w http.ResponseWriter, r *http.Request, p *principal) error {
	k, err := key(r)
	if err != nil {
		return err
	}
	if err := needPull(p); err != nil {
		return err
	}
	vs, err := s.meta.ListVersions(r.Context(), k.Namespace, k.Connector)
	if err != nil {
		return storageErr(err)
	}
	vs = slices.DeleteFunc(vs, func(v meta.Version) bool { return !p.mayInspect(v) })
	if vs, err = s.filterPullable(r, p, vs); err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, api.SearchResult{Versions: orEmpty(vs)})
}

// orEmpty is vs, never null in JSON.
func orEmpty(vs []meta.Version) []meta.Version {
	if vs == nil {
		return []meta.Version{}
	}
	return vs
}

// getVersion handles GET .../versions/{version}: the version in any state,
// with certification progress and, when rejected, the reason.
func (s *Server) getVersion(w http.ResponseWriter, r *http.Request, p *principal) error {
	k, err := key(r)
	if err != nil {
		return err
	}
	if err := needPull(p); err != nil {
		return err
	}
	v, err := s.meta.GetVersion(r.Context(), k)
	if err != nil {
		return notFoundOr(err, k)
	}
	if !p.mayInspect(v) {
		return notFoundOr(meta.ErrNotFound, k)
	}
	return writeJSON(w, http.StatusOK, v)
}

// mayInspect: a certified version is visible to every reader; a pending,
// certifying or rejected one (its progress, its reasons, its files) only
// to those who may publish to its namespace.
func (p *principal) mayInspect(v meta.Version) bool {
	return v.State == meta.Certified || p.canPublish(v.Namespace)
}

// servedFiles are the files of a version and their content types.
var servedFiles = map[string]string{
	api.FileArtifact: "application/zip", api.FileManifest: "application/json", api.FileSBOM: "application/spdx+json", api.FileReport: "application/json",
	api.FileArtifact + api.SignatureSuffix: "text/plain", api.FileSBOM + api.SignatureSuffix: "text/plain", api.FileReport + api.SignatureSuffix: "text/plain",
	api.FileModule: "application/wasm", api.FileModule + api.SignatureSuffix: "text/plain",
}

// getFile handles GET .../versions/{version}/files/{file}: the files of a
// certified version, and to the namespace's publishers those of any
// version (the report says why one was rejected).
func (s *Server) getFile(w http.ResponseWriter, r *http.Request, p *principal) error {
	k, err := key(r)
	if err != nil {
		return err
	}
	if err := needPull(p); err != nil {
		return err
	}
	name := r.PathValue("file")
	ctype, ok := servedFiles[name]
	if !ok {
		return api.CodeNotFound.Errorf("no file %q; a version has %s", name, strings.Join(slices.Sorted(maps.Keys(servedFiles)), ", "))
	}
	v, err := s.meta.GetVersion(r.Context(), k)
	if err != nil {
		return notFoundOr(err, k)
	}
	if !p.mayInspect(v) {
		return notFoundOr(meta.ErrNotFound, k)
	}
	if !strings.HasPrefix(name, api.FileReport) {
		if err := s.checkPullable(r, p, v); err != nil {
			return err
		}
	}
	digest, ok := v.Blobs[name]
	if !ok {
		return api.CodeNotFound.Errorf("%s has no %s yet (state %s)", k, name, v.State)
	}
	data, err := s.readBlob(r.Context(), digest)
	if err != nil {
		return storageErr(err)
	}
	w.Header().Set("Content-Type", ctype)
	w.Header().Set("ETag", `"`+digest+`"`)
	w.Header().Set("Content-Length", strconv.Itoa(len(data)))
	_, err = w.Write(data)
	return err
}

func notFoundOr(err error, k meta.Key) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, meta.ErrNotFound) {
		return api.CodeNotFound.Errorf("no version %s", k)
	}
	return storageErr(err)
}

// Reason is the body of deprecate and yank.
type Reason struct {
	Reason string `json:"reason"`
}

func (s *Server) deprecate(w http.ResponseWriter, r *http.Request, p *principal) error {
	return s.mark(w, r, p, "deprecate", func(v *meta.Version, reason string) { v.Deprecated = reason })
}

// yank hides a version from listings and the Go proxy's list and @latest;
// pulling it by exact version still works, so existing builds do not break.
func (s *Server) yank(w http.ResponseWriter, r *http.Request, p *principal) error {
	return s.mark(w, r, p, "yank", func(v *meta.Version, reason string) { v.Yanked = reason })
}

func (s *Server) mark(w http.ResponseWriter, r *http.Request, p *principal, action string, set func(*meta.Version, string)) error {
	k, err := key(r)
	if err != nil {
		return err
	}
	if err := mayMark(p, action, k.Namespace); err != nil {
		return err
	}
	var body Reason
	if err := readJSON(w, r, &body); err != nil {
		return err
	}
	v, err := s.setMark(r.Context(), p, k, action, body.Reason, set)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, v)
}

// mayMark fails unless p may deprecate or yank (action) in namespace.
func mayMark(p *principal, action, namespace string) error {
	if p == nil {
		return &authError{http.StatusUnauthorized, action + " needs a token"}
	}
	if !p.canPublish(namespace) {
		return &authError{http.StatusForbidden, fmt.Sprintf("token %s may not %s in namespace %q", p.token.ID, action, namespace)}
	}
	return nil
}

// setMark records a deprecation or yank of k with its reason, and audits
// it; the caller checked mayMark.
func (s *Server) setMark(ctx context.Context, p *principal, k meta.Key, action, reason string, set func(*meta.Version, string)) (meta.Version, error) {
	reason = strings.TrimSpace(reason)
	if reason == "" || len(reason) > 1024 {
		return meta.Version{}, api.CodeBadReason.Errorf("%s needs a reason of 1 to 1024 characters", action)
	}
	v, err := s.meta.UpdateVersion(ctx, k, func(v *meta.Version) error {
		set(v, reason)
		v.Updated = s.now()
		return nil
	}, s.auditEvent(p, action, k, "%s", reason))
	if err != nil {
		return meta.Version{}, notFoundOr(err, k)
	}
	s.audited()
	return v, nil
}

// audit handles GET /v1/audit?limit=N (admin).
func (s *Server) audit(w http.ResponseWriter, r *http.Request, p *principal) error {
	if p == nil {
		return &authError{http.StatusUnauthorized, "the audit log needs a token"}
	}
	if !p.can(ScopeAdmin) {
		return &authError{http.StatusForbidden, "the audit log needs the admin scope"}
	}
	limit, _ := strconv.Atoi(r.URL.Query().Get("limit"))
	if limit <= 0 || limit > 1000 {
		limit = 100
	}
	events, err := s.meta.Audit(r.Context(), limit)
	if err != nil {
		return storageErr(err)
	}
	return writeJSON(w, http.StatusOK, map[string][]meta.Event{"events": events})
}
