package connectorspec

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
)

// A pulled connector is laid out by flowgen pull in one directory: the
// verified artifact extracted below PulledSource, the certified module in
// PulledModule, and what pull verified in PulledFile.
const (
	PulledFile   = "pulled.json"
	PulledSource = "source"
	PulledModule = "module.wasm"
)

// Pulled is what pull verified of a connector it placed (PulledFile).
type Pulled struct {
	Connector       string `json:"connector"`
	Version         string `json:"version"`
	Namespace       string `json:"namespace"`
	Module          string `json:"module"`
	ModuleVersion   string `json:"module_version"`
	ArtifactDigest  string `json:"artifact_digest"`
	ModuleDigest    string `json:"module_digest"`
	KeyFingerprint  string `json:"key_fingerprint"`
	RequireConfined bool   `json:"require_confined"`
	// Dir is the pulled connector's directory (not stored: where the
	// record was found).
	Dir string `json:"-"`
}

// ModulePath is the certified module's file.
func (p *Pulled) ModulePath() string { return filepath.Join(p.Dir, PulledModule) }

// PulledOf finds the pull record of the spec at specFile: a spec below a
// PulledSource directory whose parent holds PulledFile is a pulled
// connector's. It returns nil when the spec was not pulled, and an error
// when a record exists but cannot be read or names another connector.
func PulledOf(s *Spec) (*Pulled, error) {
	dir, err := filepath.Abs(filepath.Dir(s.File))
	if err != nil {
		return nil, err
	}
	for d := dir; ; d = filepath.Dir(d) {
		if filepath.Base(d) == PulledSource {
			root := filepath.Dir(d)
			data, err := os.ReadFile(filepath.Join(root, PulledFile))
			if os.IsNotExist(err) {
				return nil, nil
			}
			if err != nil {
				return nil, err
			}
			var p Pulled
			if err := json.Unmarshal(data, &p); err != nil {
				return nil, fmt.Errorf("%s: %w", filepath.Join(root, PulledFile), err)
			}
			if p.Connector != s.ID || p.Version != s.Version {
				return nil, fmt.Errorf("%s records %s %s, not %s %s", filepath.Join(root, PulledFile), p.Connector, p.Version, s.ID, s.Version)
			}
			p.Dir = root
			return &p, nil
		}
		if parent := filepath.Dir(d); parent == d {
			return nil, nil
		}
	}
}
