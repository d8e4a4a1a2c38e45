package registry

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/flowgen-dev/flowgen/artifact"
	"github.com/flowgen-dev/flowgen/certify"
	"github.com/flowgen-dev/flowgen/registry/api"
	"github.com/flowgen-dev/flowgen/registry/meta"
)

// Wake tells the certifier that there is work. Publish calls it; it never
// blocks.
func (s *Server) Wake() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// certify runs certification on one version. It returns an error only for
// failures worth retrying (storage); a connector that fails a check is
// Rejected and that is not an error.
func (s *Server) certify(ctx context.Context, k meta.Key) error {
	start := time.Now()
	v, err := s.meta.UpdateVersion(ctx, k, func(v *meta.Version) error {
		if v.State != meta.Pending && v.State != meta.Certifying {
			return errAlreadyDone
		}
		v.State, v.Progress, v.Updated = meta.Certifying, "unpacking the artifact", s.now()
		return nil
	})
	if errors.Is(err, errAlreadyDone) {
		return nil
	}
	if err != nil {
		return err
	}
	s.log.Info("certifying", slog.String("version", k.String()), slog.String("digest", v.Digest))
	zipData, err := s.readBlob(ctx, v.Blobs[api.FileArtifact])
	if err != nil {
		return s.rejectIfTampered(ctx, k, err)
	}
	mj, err := s.readBlob(ctx, v.Blobs[api.FileManifest])
	if err != nil {
		return s.rejectIfTampered(ctx, k, err)
	}
	var m artifact.Manifest
	if err := json.Unmarshal(mj, &m); err != nil {
		return s.finish(ctx, k, nil, "the stored manifest does not parse: "+err.Error())
	}
	work, done, err := s.newWorkDir()
	if err != nil {
		return err
	}
	defer done()
	root := filepath.Join(work, "src")
	dir, err := certify.Workspace(&artifact.Artifact{Zip: zipData, Manifest: m}, root, s.cfg.FlowgenModule)
	if err != nil {
		return s.finish(ctx, k, nil, s.scrubber(root, work).Replace(err.Error()))
	}
	out := filepath.Join(work, "out")
	// The whole certification has a deadline: a connector that hangs
	// costs one worker CertifyTimeout at most, and is rejected for it.
	runCtx, cancel := context.WithTimeout(ctx, s.cfg.CertifyTimeout)
	defer cancel()
	err = s.runWorker(runCtx, WorkerRequest{Dir: dir, Out: out, Module: m.Module, FixtureDatabase: s.cfg.FixtureDatabase, Now: s.now(),
		MaxFixtures: s.cfg.MaxFixtures, SandboxBudget: s.cfg.SandboxBudget},
		func(p workerProgress) {
			line := fmt.Sprintf("%d/%d %s: %s", p.Index, p.Total, p.Check, p.Outcome)
			s.meta.UpdateVersion(ctx, k, func(v *meta.Version) error {
				v.Progress, v.Updated = line, s.now()
				return nil
			})
		})
	if ctx.Err() != nil {
		return ctx.Err() // stopped: resumed at the next start
	}
	scrub := s.scrubber(dir, work)
	if runCtx.Err() != nil {
		return s.finish(ctx, k, nil, fmt.Sprintf("certification did not finish within %s, this registry's deadline for one certification (a connector whose Run blocks or spins uses its whole time)", s.cfg.CertifyTimeout))
	}
	if err != nil {
		return s.finish(ctx, k, nil, scrub.Replace("certification could not run: "+err.Error()))
	}
	// Nothing a client can read carries a server path: the report names
	// the connector's files relative to it and the rest by what they are.
	report, err := scrubReport(filepath.Join(out, certify.ReportFile), scrub)
	if err != nil {
		return s.finish(ctx, k, nil, "the certification worker wrote no readable report: "+scrub.Replace(err.Error()))
	}
	reason := ""
	switch {
	case report.Insecure:
		reason = "certification ran without a sandbox; the registry never accepts that"
	case !report.Passed():
		reason = "certification failed: " + failedChecks(report)
	case report.ArtifactDigest != v.Digest:
		reason = fmt.Sprintf("the registry packaged the unpacked upload as %s, not the uploaded %s: the artifact was not built by flowgen package", report.ArtifactDigest, v.Digest)
	case !specCertified(m, report):
		reason = "the manifest's spec is not the spec that was certified"
	default:
		reason = checkModule(out, report)
	}
	// A reason is read by clients: it names no server path (the module
	// check's file errors carried the work directory).
	reason = scrub.Replace(reason)
	// Only now, the report checked, does the key sign: the upload's own
	// bytes, and the SBOM and report the worker wrote.
	if err := s.sign(out, zipData); err != nil {
		return err
	}
	st := &staging{s: s}
	evidence, err := s.storeEvidence(ctx, st, out)
	if err != nil {
		st.end(false)
		return err
	}
	s.metrics.certifyDuration.Observe(time.Since(start).Seconds())
	err = s.finish(ctx, k, evidence, reason)
	st.end(err == nil)
	return err
}

// checkModule says why the module the worker built is not the one its
// report certifies ("" when it is): a report that passed names the
// module, and the file has those bytes.
func checkModule(out string, report *certify.Report) string {
	wasm, err := os.ReadFile(filepath.Join(out, api.FileModule))
	switch {
	case report.ModuleDigest == "":
		return "the report names no module: nothing that production would run was certified"
	case err != nil:
		return "the certification worker wrote no readable " + api.FileModule
	case artifact.Digest(wasm) != report.ModuleDigest:
		return fmt.Sprintf("the module is %s, but the report certifies %s", artifact.Digest(wasm), report.ModuleDigest)
	}
	return ""
}

// sign writes the signatures of the uploaded zip and of the SBOM, report
// and module in out.
func (s *Server) sign(out string, zipData []byte) error {
	files := map[string][]byte{api.FileArtifact: zipData}
	for _, name := range []string{api.FileReport, api.FileSBOM, api.FileModule} {
		data, err := os.ReadFile(filepath.Join(out, name))
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return err
		}
		files[name] = data
	}
	for name, data := range files {
		sig, err := s.cfg.Signer.Sign(data)
		if err != nil {
			return fmt.Errorf("sign %s: %w", name, err)
		}
		if err := os.WriteFile(filepath.Join(out, name+api.SignatureSuffix), sig, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// scrubber replaces the server's paths (the unpacked connector, the work
// directory, the flowgen module, the Go module cache and GOROOT) with
// names that say what they were.
func (s *Server) scrubber(dir, work string) *strings.Replacer {
	var pairs []string
	add := func(path, name string) {
		if path != "" && path != "/" {
			pairs = append(pairs, path+"/", name, path, strings.TrimSuffix(name, "/"))
		}
	}
	add(dir, "")
	add(work, "$WORK/")
	add(s.cfg.WorkDir, "$WORK/")
	add(s.cfg.FlowgenModule, "$FLOWGEN/")
	goEnvOnce.Do(func() {
		out, _ := exec.Command("go", "env", "GOMODCACHE", "GOROOT").Output()
		goEnvPaths = strings.Fields(string(out))
	})
	if len(goEnvPaths) == 2 {
		add(goEnvPaths[0], "")
		add(goEnvPaths[1], "$GOROOT/")
	}
	return strings.NewReplacer(pairs...)
}

var (
	goEnvOnce  sync.Once
	goEnvPaths []string
)

// scrubReport rewrites the report file through scrub and returns it.
func scrubReport(path string, scrub *strings.Replacer) (*certify.Report, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var r certify.Report
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, err
	}
	for i := range r.Checks {
		c := &r.Checks[i]
		c.Summary = scrub.Replace(c.Summary)
		for j := range c.Evidence {
			c.Evidence[j] = scrub.Replace(c.Evidence[j])
		}
	}
	canon, err := r.CanonicalJSON()
	if err != nil {
		return nil, err
	}
	return &r, os.WriteFile(path, canon, 0o644)
}

// certifierActor is who the audit log says certified a version.
var certifierActor = &principal{token: meta.Token{ID: "certifier", Name: "registryd"}}

var errAlreadyDone = errors.New("already certified or rejected")

// storeEvidence puts the signed evidence in the blob store, each blob
// pinned by st until the version that names it is committed, and returns
// the name→digest map.
func (s *Server) storeEvidence(ctx context.Context, st *staging, out string) (map[string]string, error) {
	names := []string{api.FileReport, api.FileReport + api.SignatureSuffix, api.FileSBOM, api.FileSBOM + api.SignatureSuffix, api.FileArtifact + api.SignatureSuffix,
		api.FileModule, api.FileModule + api.SignatureSuffix}
	evidence := map[string]string{}
	for _, name := range names {
		data, err := os.ReadFile(filepath.Join(out, name))
		if errors.Is(err, os.ErrNotExist) {
			continue // a check that did not get that far
		}
		if err != nil {
			return nil, err
		}
		d, err := st.put(ctx, bytes.NewReader(data), sha256Digest(data), int64(len(data)))
		if err != nil {
			return nil, fmt.Errorf("store %s: %w", name, err)
		}
		evidence[name] = d.Digest
	}
	return evidence, nil
}

// finish records the outcome: Certified when reason is empty.
func (s *Server) finish(ctx context.Context, k meta.Key, evidence map[string]string, reason string) error {
	state := meta.Certified
	if reason != "" {
		state = meta.Rejected
	}
	_, err := s.meta.UpdateVersion(ctx, k, func(v *meta.Version) error {
		for name, d := range evidence {
			v.Blobs[name] = d
		}
		v.State, v.Reason, v.Updated = state, reason, s.now()
		v.Progress = "certified"
		if reason != "" {
			v.Progress = RejectedNext(k.Version)
		}
		return nil
	}, s.auditEvent(certifierActor, string(state), k, "%s", reason))
	if err != nil {
		return err
	}
	s.metrics.certifications.WithLabelValues(string(state)).Inc()
	s.audited()
	s.log.Info("certification finished", slog.String("version", k.String()), slog.String("state", string(state)), slog.String("reason", reason))
	return nil
}

// rejectIfTampered rejects a version whose stored upload was modified; any
// other error is retried.
func (s *Server) rejectIfTampered(ctx context.Context, k meta.Key, err error) error {
	var tampered *TamperedError
	if errors.As(err, &tampered) {
		return s.finish(ctx, k, nil, err.Error())
	}
	return err
}

func failedChecks(r *certify.Report) string {
	var b bytes.Buffer
	for _, c := range r.Checks {
		if c.Outcome == certify.Fail {
			if b.Len() > 0 {
				b.WriteString("; ")
			}
			fmt.Fprintf(&b, "%s: %s", c.Name, c.Summary)
		}
	}
	return b.String()
}

// specCertified: the manifest's spec is the one the report certified.
func specCertified(m artifact.Manifest, r *certify.Report) bool {
	d, err := m.SpecDigest()
	return err == nil && d == r.ManifestDigest
}

// RejectedNext is the Progress of a rejected version: how to publish a
// fixed one, since a version number is spent once uploaded.
func RejectedNext(version string) string {
	return fmt.Sprintf("rejected; versions are write-once, so publish the fix as a higher version: raise version in connector.yaml above %s, regenerate (go generate ./...) and publish again", version)
}
