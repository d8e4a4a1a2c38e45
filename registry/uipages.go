package registry

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/flowgen-dev/flowgen/certify"
	"github.com/flowgen-dev/flowgen/flowtype"
	"github.com/flowgen-dev/flowgen/policy"
	"github.com/flowgen-dev/flowgen/registry/api"
	"github.com/flowgen-dev/flowgen/registry/meta"
	"github.com/flowgen-dev/flowgen/signing"
)

// searchPage is the data of the catalogue's search page.
type searchPage struct {
	Query         meta.Query
	Effects       []string
	Determinisms  []string
	Versions      []meta.Version
	Reader        string
	ReaderScopes  []string
	ReaderPolicy  bool
	SearchedFirst bool
}

// uiSearch searches by text, provider, effects, determinism and
// capability: the certified versions the reader's token may pull.
func (s *Server) uiSearch(w http.ResponseWriter, r *http.Request, p *principal) {
	qv := r.URL.Query()
	q := meta.Query{Text: strings.TrimSpace(qv.Get("q")), Provider: strings.TrimSpace(qv.Get("provider")), Effects: qv.Get("effects"),
		Determinism: qv.Get("determinism"), Capability: strings.TrimSpace(qv.Get("capability"))}
	vs, err := s.meta.Search(r.Context(), q)
	if err == nil {
		vs = slices.DeleteFunc(vs, func(v meta.Version) bool { return !p.mayInspect(v) })
		vs, err = s.filterPullable(r, p, vs)
	}
	if err != nil {
		s.uiFail(w, r, err)
		return
	}
	page := searchPage{Query: q, Versions: vs, Reader: p.name(), ReaderScopes: p.token.Scopes, ReaderPolicy: p.token.Policy != ""}
	for _, e := range []flowtype.Effects{flowtype.Pure, flowtype.ReadOnly, flowtype.Effectful} {
		page.Effects = append(page.Effects, e.String())
	}
	page.Determinisms = flowtype.Determinism(0).EnumValues()
	s.site.Render(w, r, http.StatusOK, "search", "Connectors", "Search", page)
}

// connectorPage is the data of a connector's page.
type connectorPage struct {
	Key      meta.Key
	Versions []meta.Version
}

// uiConnector lists a connector's versions the reader may see, newest
// first, with their state and deprecation or yank notes.
func (s *Server) uiConnector(w http.ResponseWriter, r *http.Request, p *principal) {
	k, err := key(r)
	if err != nil {
		s.uiFail(w, r, err)
		return
	}
	vs, err := s.meta.ListVersions(r.Context(), k.Namespace, k.Connector)
	if err == nil {
		vs = slices.DeleteFunc(vs, func(v meta.Version) bool { return !p.mayInspect(v) })
		vs, err = s.filterPullable(r, p, vs)
	}
	if err == nil && len(vs) == 0 {
		err = fmt.Errorf("connector %s/%s: %w", k.Namespace, k.Connector, meta.ErrNotFound)
	}
	if err != nil {
		s.uiFail(w, r, err)
		return
	}
	slices.Reverse(vs)
	s.site.Render(w, r, http.StatusOK, "connector", k.Namespace+"/"+k.Connector, "Search", connectorPage{Key: k, Versions: vs})
}

// fileStatus is what the page says of one of a version's files.
type fileStatus struct {
	Name, Digest string
	// Signature is "verified", "missing" or why it does not verify.
	Signature string
	Verified  bool
}

// versionPage is the data of a version's page.
type versionPage struct {
	V         meta.Version
	Path      string
	Files     []fileStatus
	Report    *certify.Report
	ReportErr string
	// SBOMPackages counts the SBOM's packages (-1: no SBOM readable).
	SBOMPackages int
	CanMark      bool
	Policy       *policyVerdict
}

// policyVerdict is the answer to "would this pass my policy".
type policyVerdict struct {
	Text       string
	Problem    string
	Violations []policy.Violation
	Passes     bool
}

// uiVersion shows a version: what it declares, each file's signature
// against the registry's key, the certification checks from the signed
// report, and the SBOM.
func (s *Server) uiVersion(w http.ResponseWriter, r *http.Request, p *principal) {
	page, ok := s.versionPage(w, r, p)
	if ok {
		s.site.Render(w, r, http.StatusOK, "version", page.V.Key().String(), "Search", page)
	}
}

// versionPage reads what a version's page shows.
func (s *Server) versionPage(w http.ResponseWriter, r *http.Request, p *principal) (*versionPage, bool) {
	k, err := key(r)
	if err != nil {
		s.uiFail(w, r, err)
		return nil, false
	}
	v, err := s.meta.GetVersion(r.Context(), k)
	if err == nil && !p.mayInspect(v) {
		err = meta.ErrNotFound
	}
	if err != nil {
		s.uiFail(w, r, notFoundOr(err, k))
		return nil, false
	}
	// The page shows what a pull downloads: a version the reader's pull
	// policy refuses is refused here too, naming the rules, as the API
	// refuses its files.
	if err := s.checkPullable(r, p, v); err != nil {
		s.uiFail(w, r, err)
		return nil, false
	}
	page := &versionPage{V: v, Path: uiPath(k), SBOMPackages: -1, CanMark: p.canPublish(k.Namespace)}
	contents := map[string][]byte{}
	for _, name := range []string{api.FileArtifact, api.FileReport, api.FileSBOM} {
		st := fileStatus{Name: name, Digest: v.Blobs[name], Signature: "missing"}
		if st.Digest != "" {
			data, err := s.readBlob(r.Context(), st.Digest)
			sig, serr := s.readBlob(r.Context(), v.Blobs[name+api.SignatureSuffix])
			var tampered *TamperedError
			switch {
			case errors.As(err, &tampered):
				st.Signature = "tampered: the stored file no longer has its digest (" + tampered.Got + ")"
			case err != nil:
				st.Signature = "file unreadable: " + err.Error()
			case v.Blobs[name+api.SignatureSuffix] == "" || serr != nil:
				st.Signature = "no signature"
			default:
				if verr := signing.Verify(s.pubKey, data, sig); verr != nil {
					st.Signature = "does not verify: " + verr.Error()
				} else {
					st.Signature, st.Verified = "verified", true
					contents[name] = data
				}
			}
		}
		page.Files = append(page.Files, st)
	}
	if raw, ok := contents[api.FileReport]; ok {
		var rep certify.Report
		if err := json.Unmarshal(raw, &rep); err != nil {
			page.ReportErr = "the report does not decode: " + err.Error()
		} else {
			page.Report = &rep
		}
	} else if v.State == meta.Certified || v.State == meta.Rejected {
		page.ReportErr = "no verified report: see the files above"
	}
	if raw, ok := contents[api.FileSBOM]; ok {
		var sbom struct {
			Packages []json.RawMessage `json:"packages"`
		}
		if json.Unmarshal(raw, &sbom) == nil {
			page.SBOMPackages = len(sbom.Packages)
		}
	}
	return page, true
}

// maxPolicy bounds a pasted or uploaded policy.
const maxPolicy = 64 << 10

// uiPolicy checks the version against a policy the reader pasted or
// uploaded, the way pull checks it against a token's bound policy: on the
// signed evidence only.
func (s *Server) uiPolicy(w http.ResponseWriter, r *http.Request, p *principal) {
	r.Body = http.MaxBytesReader(w, r.Body, maxPolicy+4096)
	if err := r.ParseMultipartForm(maxPolicy); err != nil && !errors.Is(err, http.ErrNotMultipart) {
		s.uiFail(w, r, api.CodeTooLarge.Errorf("the policy: %v", err))
		return
	}
	text := r.PostFormValue("policy")
	name := "pasted policy"
	if f, hdr, err := r.FormFile("policyfile"); err == nil {
		raw, rerr := io.ReadAll(io.LimitReader(f, maxPolicy+1))
		f.Close()
		if rerr == nil && len(raw) > 0 {
			text, name = string(raw), hdr.Filename
		}
	}
	page, ok := s.versionPage(w, r, p)
	if !ok {
		return
	}
	verdict := &policyVerdict{Text: text}
	page.Policy = verdict
	switch {
	case strings.TrimSpace(text) == "":
		verdict.Problem = "paste a policy or choose a file"
	case len(text) > maxPolicy:
		verdict.Problem = fmt.Sprintf("the policy is over %d KiB", maxPolicy>>10)
	default:
		pol, err := policy.Parse(name, []byte(text))
		if err != nil {
			verdict.Problem = err.Error()
			break
		}
		verdict.Violations, err = s.checkPolicy(r.Context(), pol, page.V)
		if err != nil {
			s.uiFail(w, r, err)
			return
		}
		verdict.Passes = len(verdict.Violations) == 0
	}
	s.site.Render(w, r, http.StatusOK, "version", page.V.Key().String(), "Search", page)
}

// markAction is deprecate or yank, as the pages offer it.
type markAction struct {
	Name, Verb, Done, Warning string
	set                       func(*meta.Version, string)
}

var markActions = []markAction{
	{Name: "deprecate", Verb: "Deprecate", Done: "Deprecated", Warning: "Pulls still work and warn with the reason; the Go proxy's list and @latest leave it out while another version is current, so go get moves off it as off a retracted version.",
		set: func(v *meta.Version, reason string) { v.Deprecated = reason }},
	{Name: "yank", Verb: "Yank", Done: "Yanked", Warning: "The version leaves listings and the Go proxy's list and @latest; builds that pin it still pull it.",
		set: func(v *meta.Version, reason string) { v.Yanked = reason }},
}

// markOf finds the action of the request and checks the reader may take it.
func (s *Server) markOf(w http.ResponseWriter, r *http.Request, p *principal, name string) (meta.Key, markAction, bool) {
	k, err := key(r)
	i := slices.IndexFunc(markActions, func(a markAction) bool { return a.Name == name })
	switch {
	case err != nil:
	case i < 0:
		err = api.CodeBadQuery.Errorf("unknown action %q: want deprecate or yank", name)
	default:
		err = mayMark(p, name, k.Namespace)
	}
	if err != nil {
		s.uiFail(w, r, err)
		return k, markAction{}, false
	}
	return k, markActions[i], true
}

// uiConfirm asks the reader to confirm a deprecation or yank, with its
// reason.
func (s *Server) uiConfirm(w http.ResponseWriter, r *http.Request, p *principal) {
	k, a, ok := s.markOf(w, r, p, r.URL.Query().Get("action"))
	if !ok {
		return
	}
	s.site.Render(w, r, http.StatusOK, "confirm", a.Verb+" "+k.String()+"?", "Search", struct {
		Action markAction
		Post   string
		Back   string
	}{a, uiPath(k) + "/" + a.Name, uiPath(k)})
}

// uiMark deprecates or yanks, as POST .../deprecate and .../yank do.
func (s *Server) uiMark(w http.ResponseWriter, r *http.Request, p *principal) {
	k, a, ok := s.markOf(w, r, p, r.PathValue("action"))
	if !ok {
		return
	}
	if _, err := s.setMark(r.Context(), p, k, a.Name, r.PostFormValue("reason"), a.set); err != nil {
		s.uiFail(w, r, err)
		return
	}
	http.Redirect(w, r, uiPath(k)+"?done="+url.QueryEscape(a.Done+"."), http.StatusSeeOther)
}
