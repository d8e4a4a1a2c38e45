package registry

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/flowgen-dev/flowgen/policy"
	"github.com/flowgen-dev/flowgen/registry/api"
	"github.com/flowgen-dev/flowgen/registry/meta"
)

// The admin API: what an operator does to a running registry, so that
// nothing needs the stores to themselves (an embedded metadata file has
// one owner, the server). Every route needs the admin scope.
//
//	POST /v1/admin/tokens             api.TokenRequest → 201 api.TokenCreated
//	GET  /v1/admin/tokens             → api.TokenList
//	POST /v1/admin/tokens/{id}/revoke → api.TokenInfo
//	POST /v1/admin/gc                 api.GCRequest → api.GCReport

// Info is what the admin API shows of t.
func Info(t meta.Token) api.TokenInfo {
	return api.TokenInfo{ID: t.ID, Name: t.Name, Scopes: t.Scopes, Created: t.Created, Revoked: t.Revoked, Expires: t.Expires, Policy: t.Policy != ""}
}

// CreateToken checks req, stores a new token in store and audits it as
// actor. registryd token create uses it when the server is not running,
// the admin API when it is.
func CreateToken(ctx context.Context, store meta.Store, req api.TokenRequest, actor string, now time.Time) (api.TokenCreated, error) {
	var exp time.Time
	if req.ExpiresIn != "" {
		d, err := time.ParseDuration(req.ExpiresIn)
		if err != nil || d <= 0 {
			return api.TokenCreated{}, api.CodeBadToken.Errorf("expires_in %q: want a positive duration such as 720h", req.ExpiresIn)
		}
		exp = now.Add(d)
	}
	if req.Policy != "" {
		if _, err := policy.Parse("policy", []byte(req.Policy)); err != nil {
			return api.TokenCreated{}, api.CodeBadPolicy.Errorf("%v", err)
		}
	}
	t, secret, err := NewToken(req.Name, req.Scopes, exp, req.Policy, now)
	if err != nil {
		return api.TokenCreated{}, api.CodeBadToken.Errorf("%v", err)
	}
	created := meta.Event{Time: now.UTC(), Actor: actor, Action: "token-create", Subject: t.ID, Detail: t.Name + " " + strings.Join(t.Scopes, ",")}
	if err := store.CreateToken(ctx, t, created); err != nil {
		return api.TokenCreated{}, storageErr(err)
	}
	return api.TokenCreated{TokenInfo: Info(t), Secret: secret}, nil
}

// RevokeToken revokes the token id in store and audits it as actor.
func RevokeToken(ctx context.Context, store meta.Store, id, actor string, now time.Time) (api.TokenInfo, error) {
	revoked := meta.Event{Time: now.UTC(), Actor: actor, Action: "token-revoke", Subject: id}
	if err := store.RevokeToken(ctx, id, now.UTC(), revoked); err != nil {
		return api.TokenInfo{}, err
	}
	ts, err := store.ListTokens(ctx)
	if err != nil {
		return api.TokenInfo{}, storageErr(err)
	}
	for _, t := range ts {
		if t.ID == id {
			return Info(t), nil
		}
	}
	return api.TokenInfo{}, meta.ErrNotFound
}

func needAdmin(p *principal) error {
	if p == nil {
		return &authError{http.StatusUnauthorized, "the admin API needs a token (scope admin)"}
	}
	if !p.can(ScopeAdmin) {
		return &authError{http.StatusForbidden, fmt.Sprintf("token %s has no admin scope", p.token.ID)}
	}
	return nil
}

func (s *Server) adminCreateToken(w http.ResponseWriter, r *http.Request, p *principal) error {
	if err := needAdmin(p); err != nil {
		return err
	}
	var req api.TokenRequest
	if err := readJSON(w, r, &req); err != nil {
		return err
	}
	created, err := CreateToken(r.Context(), s.meta, req, p.name(), s.now())
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusCreated, created)
}

func (s *Server) adminListTokens(w http.ResponseWriter, r *http.Request, p *principal) error {
	if err := needAdmin(p); err != nil {
		return err
	}
	ts, err := s.meta.ListTokens(r.Context())
	if err != nil {
		return storageErr(err)
	}
	list := api.TokenList{Tokens: []api.TokenInfo{}}
	for _, t := range ts {
		list.Tokens = append(list.Tokens, Info(t))
	}
	return writeJSON(w, http.StatusOK, list)
}

func (s *Server) adminRevokeToken(w http.ResponseWriter, r *http.Request, p *principal) error {
	if err := needAdmin(p); err != nil {
		return err
	}
	info, err := RevokeToken(r.Context(), s.meta, r.PathValue("id"), p.name(), s.now())
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, info)
}

func (s *Server) adminGC(w http.ResponseWriter, r *http.Request, p *principal) error {
	if err := needAdmin(p); err != nil {
		return err
	}
	var req api.GCRequest
	if err := readJSON(w, r, &req); err != nil {
		return err
	}
	opts := GCOptions{DryRun: req.DryRun, Grace: s.cfg.GCGrace}
	if req.Grace != "" {
		d, err := time.ParseDuration(req.Grace)
		if err != nil || d < 0 {
			return api.CodeBadRequest.Errorf("grace %q: want a duration such as 24h", req.Grace)
		}
		opts.Grace = d
	}
	rep, err := s.CollectGarbage(r.Context(), opts)
	if err != nil {
		return storageErr(err)
	}
	// The collection is done in the blob store, which has no commit to
	// share: its event follows it.
	if err := s.meta.AppendAudit(context.WithoutCancel(r.Context()), meta.Event{Time: s.now(), Actor: p.name(), Action: "gc", Subject: "blobs",
		Detail: fmt.Sprintf("dry run %v: %d of %d blobs removed", rep.DryRun, len(rep.Removed), rep.Blobs)}); err != nil {
		s.log.Error("audit log", slog.Any("error", err), slog.String("action", "gc"))
	}
	return writeJSON(w, http.StatusOK, rep)
}
