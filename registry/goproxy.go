package registry

import (
	"crypto/sha256"
	"encoding/hex"
	"io"
	"net/http"
	"slices"
	"strings"
	"time"

	"golang.org/x/mod/module"
	"golang.org/x/mod/semver"

	"github.com/flowgen-dev/flowgen/artifact"
	"github.com/flowgen-dev/flowgen/internal/flowgenmod"
	"github.com/flowgen-dev/flowgen/registry/api"
	"github.com/flowgen-dev/flowgen/registry/meta"
)

// goProxy serves GET /go/<module>/@v/list, /@v/<version>.info, .mod, .zip
// and /<module>/@latest: the GOPROXY protocol over certified, policy-
// satisfying versions. Everything else is 404 or 410, which lets the go
// command fall through to the next proxy in a GOPROXY list.
func (s *Server) goProxy(w http.ResponseWriter, r *http.Request, p *principal) error {
	if err := needPull(p); err != nil {
		return err
	}
	rest := r.PathValue("path")
	escMod, file, latest := "", "", false
	if m, ok := strings.CutSuffix(rest, "/@latest"); ok {
		escMod, latest = m, true
	} else if m, f, ok := strings.Cut(rest, "/@v/"); ok {
		escMod, file = m, f
	} else {
		return goNotFound("not a module proxy path: %s", rest)
	}
	mod, err := module.UnescapePath(escMod)
	if err != nil {
		return goNotFound("bad module path %q: %v", escMod, err)
	}
	if mod == flowgenmod.Path && s.flowgen != nil {
		return s.serveFlowgen(w, latest, file)
	}
	vs, err := s.meta.Search(r.Context(), meta.Query{Module: mod})
	if err != nil {
		return storageErr(err)
	}
	if vs, err = s.filterPullable(r, p, vs); err != nil {
		return err
	}
	// What the go command may choose from: versions neither yanked nor
	// deprecated, or the deprecated ones when nothing else is left. The go
	// command picks @latest and upgrades from @v/list (it asks @latest only
	// when the list is empty), so a deprecated version left out of the list
	// is one go get ...@latest and go get -u move off, as they move off a
	// retracted one; every version stays fetchable by its number.
	listed := slices.DeleteFunc(slices.Clone(vs), func(v meta.Version) bool { return v.Yanked != "" })
	if current := slices.DeleteFunc(slices.Clone(listed), func(v meta.Version) bool { return v.Deprecated != "" }); len(current) > 0 {
		listed = current
	}
	switch {
	case latest:
		if len(listed) == 0 {
			return goNotFound("no certified version of %s", mod)
		}
		// As the go command picks: the highest release, else the highest
		// pre-release.
		best := listed[len(listed)-1] // semver order
		for _, v := range slices.Backward(listed) {
			if semver.Prerelease(v.ModuleVersion) == "" {
				best = v
				break
			}
		}
		return writeInfo(w, best)
	case file == "list":
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		for _, v := range listed {
			io.WriteString(w, v.ModuleVersion+"\n")
		}
		return nil
	}
	ext := file[strings.LastIndexByte(file, '.')+1:]
	escVer := strings.TrimSuffix(file, "."+ext)
	ver, err := module.UnescapeVersion(escVer)
	if err != nil || (ext != "info" && ext != "mod" && ext != "zip") {
		return goNotFound("not a module proxy file: %s", file)
	}
	i := slices.IndexFunc(vs, func(v meta.Version) bool { return v.ModuleVersion == ver })
	if i < 0 {
		return goNotFound("%s@%s is not a certified version here", mod, ver)
	}
	v := vs[i]
	switch ext {
	case "info":
		return writeInfo(w, v)
	case "mod":
		zipData, err := s.readBlob(r.Context(), v.Blobs[api.FileArtifact])
		if err != nil {
			return storageErr(err)
		}
		gomod, err := artifact.ZipFile(zipData, v.Module+"@"+v.ModuleVersion+"/go.mod")
		if err != nil {
			return goNotFound("%v", err)
		}
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, err = w.Write(gomod)
		return err
	default:
		zipData, err := s.readBlob(r.Context(), v.Blobs[api.FileArtifact])
		if err != nil {
			return storageErr(err)
		}
		w.Header().Set("Content-Type", "application/zip")
		_, err = w.Write(zipData)
		return err
	}
}

func goNotFound(format string, args ...any) error {
	return api.CodeNotFound.Errorf(format, args...)
}

// writeInfo writes the .info JSON the go command expects.
func writeInfo(w http.ResponseWriter, v meta.Version) error {
	return writeJSON(w, http.StatusOK, struct {
		Version string
		Time    time.Time
	}{v.ModuleVersion, v.Created.UTC()})
}

// serveFlowgen answers the proxy protocol for the flowgen module the
// registry certifies with: its one version.
func (s *Server) serveFlowgen(w http.ResponseWriter, latest bool, file string) error {
	m := s.flowgen
	esc, _ := module.EscapeVersion(m.Version)
	info := func() error {
		return writeJSON(w, http.StatusOK, struct{ Version string }{m.Version})
	}
	switch file {
	case "list":
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, err := io.WriteString(w, m.Version+"\n")
		return err
	case esc + ".info":
		return info()
	case esc + ".mod":
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, err := w.Write(m.GoMod)
		return err
	case esc + ".zip":
		w.Header().Set("Content-Type", "application/zip")
		_, err := w.Write(m.Zip)
		return err
	}
	if latest {
		return info()
	}
	return goNotFound("%s: this registry serves %s only", flowgenmod.Path, m.Version)
}

func (s *Server) flowgenModule(w http.ResponseWriter, r *http.Request, p *principal) error {
	if err := needPull(p); err != nil {
		return err
	}
	if s.flowgen == nil {
		return api.CodeNotFound.Errorf("this registry serves no flowgen module (registryd serve --flowgen-module DIR)")
	}
	sum := sha256.Sum256(s.flowgen.Zip)
	return writeJSON(w, http.StatusOK, api.FlowgenModuleInfo{Module: flowgenmod.Path, Version: s.flowgen.Version,
		ZipSHA256: hex.EncodeToString(sum[:]), Signature: string(s.flowgenSig)})
}
