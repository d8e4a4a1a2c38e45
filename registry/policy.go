package registry

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"slices"

	"github.com/flowgen-dev/flowgen/policy"
	"github.com/flowgen-dev/flowgen/registry/api"
	"github.com/flowgen-dev/flowgen/registry/meta"
)

// violations checks v against the pull policy bound to the caller's token
// (none: nil). Results are cached by policy and evidence digests, which
// never change for a version.
func (s *Server) violations(ctx context.Context, p *principal, v meta.Version) ([]policy.Violation, error) {
	if p == nil || p.token.Policy == "" {
		return nil, nil
	}
	if v.State != meta.Certified {
		return s.checkPolicy(ctx, nil, v) // fails "certified" whatever the policy
	}
	cacheKey := HashToken(p.token.Policy) + " " + v.Blobs[api.FileReport] + " " + v.Blobs[api.FileManifest] + " " + v.Namespace + " " + v.Publisher
	if cached, ok := s.policyCache.Load(cacheKey); ok {
		return cached.([]policy.Violation), nil
	}
	pol, err := policy.Parse("policy of token "+p.token.ID, []byte(p.token.Policy))
	if err != nil {
		return nil, err
	}
	out, err := s.checkPolicy(ctx, pol, v)
	if err == nil {
		s.policyCache.Store(cacheKey, out)
	}
	return out, err
}

// checkPolicy checks v against pol on its signed evidence: the report,
// its signature and the manifest, read from storage and verified against
// the registry's own key. A version that is not certified fails the
// "certified" rule alone.
func (s *Server) checkPolicy(ctx context.Context, pol *policy.Policy, v meta.Version) ([]policy.Violation, error) {
	if v.State != meta.Certified {
		return []policy.Violation{{Rule: "certified", Message: fmt.Sprintf("%s is %s", v.Key(), v.State), Evidence: "registry state"}}, nil
	}
	var files [3][]byte
	var err error
	for i, name := range []string{api.FileReport, api.FileReport + api.SignatureSuffix, api.FileManifest} {
		if files[i], err = s.readBlob(ctx, v.Blobs[name]); err != nil {
			return nil, fmt.Errorf("%s %s: %w", v.Key(), name, err)
		}
	}
	ev, err := policy.VerifiedEvidence(s.pubKey, files[0], files[1], files[2], v.Namespace, v.Publisher)
	if err != nil {
		// Stored evidence that does not verify against the registry's own
		// key was changed after the registry signed it.
		s.metrics.tampered.Inc()
		s.log.ErrorContext(ctx, "stored evidence does not verify: storage was modified", slog.String("version", v.Key().String()), slog.Any("error", err))
		return nil, &TamperedError{Digest: v.Blobs[api.FileReport], Got: "evidence that does not verify (" + err.Error() + ")"}
	}
	return pol.Check(ev), nil
}

// filterPullable drops the versions the caller's policy rejects. Evidence
// that cannot be judged is an error, never a quiet omission: tampered
// evidence is 500 tampered, as loud as a tampered artifact, and a storage
// failure 503, so the go command does not move on to another proxy.
func (s *Server) filterPullable(r *http.Request, p *principal, vs []meta.Version) ([]meta.Version, error) {
	var firstErr error
	out := slices.DeleteFunc(vs, func(v meta.Version) bool {
		bad, err := s.violations(r.Context(), p, v)
		if err != nil {
			if firstErr == nil {
				firstErr = storageErr(err)
			}
			return true
		}
		return len(bad) > 0
	})
	return out, firstErr
}

// checkPullable is 403 naming every failed rule when the caller's policy
// rejects v.
func (s *Server) checkPullable(r *http.Request, p *principal, v meta.Version) error {
	bad, err := s.violations(r.Context(), p, v)
	if err != nil {
		return storageErr(err)
	}
	if len(bad) == 0 {
		return nil
	}
	e := api.CodePolicy.Errorf("%s does not satisfy the pull policy of token %s: %d rule(s) failed", v.Key(), p.token.ID, len(bad))
	for _, b := range bad {
		e.Details = append(e.Details, b.String())
	}
	return e
}
