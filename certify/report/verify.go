package report

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	spdxjson "github.com/spdx/tools-golang/json"
	"github.com/spdx/tools-golang/spdx"
	"github.com/spdx/tools-golang/spdx/v2/common"

	"github.com/flowgen-dev/flowgen/artifact"
	"github.com/flowgen-dev/flowgen/signing"
)

// Verification is what Verify established about a certification directory.
// Problems is empty exactly when every file is present, every signature
// matches the public key, the report, SBOM and artifact agree on the
// artifact digest, the module is the one the report names, and the
// report has no failed check.
type Verification struct {
	Report   *Report
	Manifest artifact.Manifest
	// Verified lists the files whose signatures matched.
	Verified []string
	// Problems names every failed condition, one sentence each.
	Problems []string
}

// OK reports whether nothing was wrong.
func (v *Verification) OK() bool { return len(v.Problems) == 0 }

// Verify checks the certification directory dir (as Run writes it with
// Out and a Signer) against the PEM public key pub. It returns an error
// only when pub is unusable; everything about the files is a Problem, and
// all of them are reported, not just the first.
func Verify(dir string, pub []byte) (*Verification, error) {
	if err := signing.CheckPublicKey(pub); err != nil {
		return nil, err
	}
	v := &Verification{}
	read := func(name string) []byte {
		path := filepath.Join(dir, name)
		data, err := os.ReadFile(path)
		if err != nil {
			v.problem("%s: %v", name, unwrapPathError(err))
			return nil
		}
		sig, err := os.ReadFile(path + ".sig")
		if err != nil {
			v.problem("%s: no signature (%s.sig)", name, name)
			return data
		}
		if err := signing.Verify(pub, data, sig); err != nil {
			v.problem("%s: %v", name, err)
			return data
		}
		v.Verified = append(v.Verified, name)
		return data
	}
	zipData := read(ArtifactFile)
	sbomData := read(SBOMFile)
	reportData := read(ReportFile)
	manifestData, err := os.ReadFile(filepath.Join(dir, ArtifactManifestFile))
	if err != nil {
		v.problem("%s: %v", ArtifactManifestFile, unwrapPathError(err))
	} else if err := json.Unmarshal(manifestData, &v.Manifest); err != nil {
		v.problem("%s: %v", ArtifactManifestFile, err)
	}

	var digest string
	if zipData != nil {
		digest = artifact.Digest(zipData)
		if v.Manifest.Digest != "" && v.Manifest.Digest != digest {
			v.problem("%s is %s but %s says %s", ArtifactFile, digest, ArtifactManifestFile, v.Manifest.Digest)
		} else if manifestData != nil {
			// The manifest is not signed itself: every field of it must
			// be what the signed zip holds (files, module, version).
			if _, err := artifact.Check(&artifact.Artifact{Zip: zipData, Manifest: v.Manifest}); err != nil {
				v.problem("%s does not describe the signed %s: %v", ArtifactManifestFile, ArtifactFile, err)
			}
		}
	}
	if reportData != nil {
		var r Report
		if err := json.Unmarshal(reportData, &r); err != nil {
			v.problem("%s: %v", ReportFile, err)
		} else {
			v.Report = &r
			if digest != "" && r.ArtifactDigest != digest {
				v.problem("%s certifies artifact %q, but %s is %s", ReportFile, r.ArtifactDigest, ArtifactFile, digest)
			}
			// The manifest's spec is the one the signed report certified.
			if len(v.Manifest.Spec) > 0 {
				if d, err := v.Manifest.SpecDigest(); err != nil || d != r.ManifestDigest {
					v.problem("%s carries a spec other than the one %s certifies", ArtifactManifestFile, ReportFile)
				}
			}
			for _, c := range r.Checks {
				if c.Outcome == Fail {
					v.problem("%s: check %s failed: %s", ReportFile, c.Name, c.Summary)
				}
			}
		}
	}
	if v.Report != nil && v.Report.ModuleDigest != "" {
		if wasm := read(ModuleFile); wasm != nil && artifact.Digest(wasm) != v.Report.ModuleDigest {
			v.problem("%s is %s, but %s certifies module %s", ModuleFile, artifact.Digest(wasm), ReportFile, v.Report.ModuleDigest)
		}
	}
	if sbomData != nil && digest != "" {
		doc, err := spdxjson.Read(bytes.NewReader(sbomData))
		if err != nil {
			v.problem("%s: %v", SBOMFile, err)
		} else if !sbomDescribes(doc, strings.TrimPrefix(digest, "sha256:")) {
			v.problem("%s does not describe %s (no package carries that SHA256)", SBOMFile, digest)
		}
	}
	return v, nil
}

func (v *Verification) problem(format string, args ...any) {
	v.Problems = append(v.Problems, fmt.Sprintf(format, args...))
}

func unwrapPathError(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// sbomDescribes reports whether a package in doc carries the SHA256 hex.
func sbomDescribes(doc *spdx.Document, hexDigest string) bool {
	for _, p := range doc.Packages {
		for _, c := range p.PackageChecksums {
			if c.Algorithm == common.SHA256 && c.Value == hexDigest {
				return true
			}
		}
	}
	return false
}
