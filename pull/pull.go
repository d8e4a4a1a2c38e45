// Package pull fetches a certified connector version from a registry,
// verifies everything the registry serves about it against a trusted key
// and an optional pull policy, and only then places it in a directory laid
// out as a Go module proxy (GOPROXY=file://DIR). Nothing is placed when
// any check fails. flowgen pull is a thin shell around Pull.
package pull

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/flowgen-dev/flowgen/artifact"
	"github.com/flowgen-dev/flowgen/certify/report"
	"github.com/flowgen-dev/flowgen/connectorspec"
	"github.com/flowgen-dev/flowgen/policy"
	"github.com/flowgen-dev/flowgen/registry/api"
	"github.com/flowgen-dev/flowgen/registry/client"
	"github.com/flowgen-dev/flowgen/signing"
)

// Options steer a pull.
type Options struct {
	// Dir is the module proxy directory the module goes into.
	Dir string
	// Key is the registry key the platform trusts (PEM). Without it the
	// key the registry serves is used, which only proves the files agree
	// with each other; Result.Warnings says so.
	Key []byte
	// Policy, when set, must pass against the signed evidence.
	Policy *policy.Policy
}

// Result is what a successful pull verified and placed.
type Result struct {
	// Version is the registry's record of the version.
	Version api.Version
	// Checks is how many certification checks the signed report holds
	// (all passed).
	Checks int
	// ModuleDir is where the module's .zip, .mod and .info went, with the
	// evidence in <version>.certification/ beside them.
	ModuleDir string
	// Connector is the pulled connector's directory, for flows to list
	// under connectors: its source (the spec with its schemas) in
	// source/, the certified module in module.wasm, and pulled.json.
	Connector string
	// FlowgenVersion is the unpublished flowgen module version placed
	// beside the connector (signed by the same key), or "" when the
	// connector needs none from the registry.
	FlowgenVersion string
	// Warnings are things the caller should tell a person: a yanked or
	// deprecated version, a key taken from the registry itself.
	Warnings []string
}

// RefusedError is a pull that verification refused; nothing was placed.
type RefusedError struct {
	Key api.Key
	// Problems lists every failed check, each in a sentence.
	Problems []string
}

func (e *RefusedError) Error() string {
	return fmt.Sprintf("%s: refused, nothing placed:\n  - %s", e.Key, strings.Join(e.Problems, "\n  - "))
}

// ErrNotCertified is returned (wrapped) for a version that is not
// certified.
var ErrNotCertified = errors.New("not certified")

// evidenceFiles are the files a pull downloads and verifies.
var evidenceFiles = []string{
	api.FileArtifact, api.FileArtifact + api.SignatureSuffix,
	api.FileManifest,
	api.FileSBOM, api.FileSBOM + api.SignatureSuffix,
	api.FileReport, api.FileReport + api.SignatureSuffix,
	api.FileModule, api.FileModule + api.SignatureSuffix,
}

// Pull fetches version k from the registry c talks to, checks the
// artifact's digest against the registry's record, the signatures of the
// artifact, SBOM and report against the trusted key, that the SBOM and
// report name that artifact, that no check failed and, with a policy,
// every rule of it, then places the module (and the flowgen module it was
// certified with, when that is unpublished) under opts.Dir.
func Pull(ctx context.Context, c *client.Client, k api.Key, opts Options) (*Result, error) {
	v, err := c.Version(ctx, k)
	if err != nil {
		return nil, err
	}
	if v.State != api.Certified {
		return nil, fmt.Errorf("the version is %s: %w: %s", v.State, ErrNotCertified, v.Reason)
	}
	res := &Result{Version: v}
	if v.Yanked != "" {
		res.Warnings = append(res.Warnings, fmt.Sprintf("%s is yanked: %s", k, v.Yanked))
	}
	if v.Deprecated != "" {
		res.Warnings = append(res.Warnings, fmt.Sprintf("%s is deprecated: %s", k, v.Deprecated))
	}
	pub := opts.Key
	if pub == nil {
		if pub, err = c.PublicKey(ctx); err != nil {
			return nil, fmt.Errorf("public key: %w", err)
		}
		res.Warnings = append(res.Warnings, "trusting the key the registry serves; pass --key to pin it")
	}
	evidenceDir, err := os.MkdirTemp("", "flowgen-pull-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(evidenceDir)
	files := map[string][]byte{}
	for _, f := range evidenceFiles {
		data, err := c.File(ctx, k, f)
		if err != nil {
			return nil, fmt.Errorf("download %s: %w", f, err)
		}
		files[f] = data
		if err := os.WriteFile(filepath.Join(evidenceDir, f), data, 0o644); err != nil {
			return nil, err
		}
	}
	var problems []string
	if got := artifact.Digest(files[api.FileArtifact]); got != v.Digest {
		problems = append(problems, fmt.Sprintf("artifact.zip is %s, but the registry recorded %s: it was modified after publishing", got, v.Digest))
	}
	ver, err := report.Verify(evidenceDir, pub)
	if err != nil {
		return nil, err
	}
	problems = append(problems, ver.Problems...)
	confined := opts.Policy.ConfinedRequired()
	if len(problems) == 0 && confined && ver.Report.ModuleDigest == "" {
		problems = append(problems, "requireConfined: the certification names no module, so the connector cannot run confined (a policy with requireConfined: false accepts it)")
	}
	if len(problems) == 0 && opts.Policy != nil {
		ev, err := policy.VerifiedEvidence(pub, files[api.FileReport], files[api.FileReport+api.SignatureSuffix], files[api.FileManifest], k.Namespace, v.Publisher)
		if err != nil {
			problems = append(problems, err.Error())
		} else {
			for _, viol := range opts.Policy.Check(ev) {
				problems = append(problems, "policy "+viol.String())
			}
		}
	}
	if len(problems) > 0 {
		return nil, &RefusedError{Key: k, Problems: problems}
	}
	res.Checks = len(ver.Report.Checks)
	gomod, err := artifact.ZipFile(files[api.FileArtifact], v.Module+"@"+v.ModuleVersion+"/go.mod")
	if err != nil {
		return nil, err
	}
	if res.FlowgenVersion, err = placeFlowgen(ctx, c, opts.Dir, gomod, pub); err != nil {
		return nil, err
	}
	if res.ModuleDir, err = placeModule(opts.Dir, v, gomod, files); err != nil {
		return nil, err
	}
	if res.Connector, err = placeConnector(res.ModuleDir, v, files, connectorspec.Pulled{
		Connector: v.Connector, Version: v.Version, Namespace: k.Namespace, Module: v.Module, ModuleVersion: v.ModuleVersion,
		ArtifactDigest: v.Digest, ModuleDigest: ver.Report.ModuleDigest, KeyFingerprint: signing.Fingerprint(pub),
		RequireConfined: confined,
	}); err != nil {
		return nil, err
	}
	return res, nil
}
