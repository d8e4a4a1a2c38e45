package pull

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/flowgen-dev/flowgen/artifact"
	"github.com/flowgen-dev/flowgen/connectorspec"
	"github.com/flowgen-dev/flowgen/internal/atomicfile"
	"github.com/flowgen-dev/flowgen/internal/flowgenmod"
	"github.com/flowgen-dev/flowgen/registry/api"
	"github.com/flowgen-dev/flowgen/registry/client"
	"github.com/flowgen-dev/flowgen/signing"
	"golang.org/x/mod/modfile"
	"golang.org/x/mod/module"
	"golang.org/x/mod/semver"
)

// placeModule writes the module into a GOPROXY directory layout under
// root, with the evidence beside it in VERSION.certification/.
func placeModule(root string, v api.Version, gomod []byte, files map[string][]byte) (string, error) {
	dir, err := placeProxyVersion(root, v.Module, v.ModuleVersion, files[api.FileArtifact], gomod, v.Created)
	if err != nil {
		return "", err
	}
	escVer, _ := module.EscapeVersion(v.ModuleVersion)
	evidence := filepath.Join(dir, escVer+".certification")
	if err := os.MkdirAll(evidence, 0o755); err != nil {
		return "", err
	}
	for name, data := range files {
		if err := atomicfile.Write(filepath.Join(evidence, name), data, 0o644); err != nil {
			return "", err
		}
	}
	return dir, nil
}

// placeConnector lays the pulled connector out for flows in the evidence
// directory of its module version (connectorspec.PulledOf reads it): the
// artifact extracted into source/ beside module.wasm, and pulled.json; it
// returns that directory.
func placeConnector(moduleDir string, v api.Version, files map[string][]byte, p connectorspec.Pulled) (string, error) {
	escVer, _ := module.EscapeVersion(v.ModuleVersion)
	dir := filepath.Join(moduleDir, escVer+".certification")
	var m artifact.Manifest
	if err := json.Unmarshal(files[api.FileManifest], &m); err != nil {
		return "", fmt.Errorf("artifact manifest: %w", err)
	}
	src := filepath.Join(dir, connectorspec.PulledSource)
	if err := os.RemoveAll(src); err != nil {
		return "", err
	}
	if _, err := artifact.Extract(&artifact.Artifact{Zip: files[api.FileArtifact], Manifest: m}, src); err != nil {
		return "", err
	}
	data, err := json.MarshalIndent(p, "", "  ")
	if err != nil {
		return "", err
	}
	return dir, atomicfile.Write(filepath.Join(dir, connectorspec.PulledFile), append(data, '\n'), 0o644)
}

// placeProxyVersion writes one module version (.zip, .mod, .info) into
// the GOPROXY directory layout under root and adds it to the list.
func placeProxyVersion(root, modPath, version string, zipData, gomod []byte, created time.Time) (string, error) {
	esc, err := module.EscapePath(modPath)
	if err != nil {
		return "", err
	}
	escVer, err := module.EscapeVersion(version)
	if err != nil {
		return "", err
	}
	dir := filepath.Join(root, filepath.FromSlash(esc), "@v")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	info, _ := json.Marshal(struct {
		Version string
		Time    time.Time `json:",omitzero"`
	}{version, created.UTC()})
	for name, data := range map[string][]byte{escVer + ".zip": zipData, escVer + ".mod": gomod, escVer + ".info": info} {
		if err := atomicfile.Write(filepath.Join(dir, name), data, 0o644); err != nil {
			return "", err
		}
	}
	listed, err := os.ReadFile(filepath.Join(dir, "list"))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return "", err
	}
	versions := strings.Fields(string(listed))
	if !slices.Contains(versions, version) {
		versions = append(versions, version)
	}
	semver.Sort(versions)
	return dir, atomicfile.Write(filepath.Join(dir, "list"), []byte(strings.Join(versions, "\n")+"\n"), 0o644)
}

// placeFlowgen places the flowgen module the connector requires when the
// registry serves it, checked against the trusted key. It returns the
// module's version, or "" when the connector needs none from the registry.
func placeFlowgen(ctx context.Context, c *client.Client, dir string, gomod, pub []byte) (string, error) {
	mf, err := modfile.ParseLax("go.mod", gomod, nil)
	if err != nil {
		return "", err
	}
	want := ""
	for _, r := range mf.Require {
		if r.Mod.Path == flowgenmod.Path {
			want = r.Mod.Version
		}
	}
	if want == "" || !module.IsPseudoVersion(want) {
		return "", nil // none, or a published version the usual proxies serve
	}
	info, err := c.FlowgenModule(ctx)
	if err != nil {
		return "", fmt.Errorf("the connector requires %s %s, an unpublished version, and the registry does not serve it: %w", flowgenmod.Path, want, err)
	}
	if info.Version != want {
		return "", fmt.Errorf("the connector requires %s %s, and the registry serves %s", flowgenmod.Path, want, info.Version)
	}
	esc, _ := module.EscapeVersion(want)
	base := flowgenmod.Path + "/@v/" + esc
	zipData, err := c.GoProxyFile(ctx, base+".zip")
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(zipData)
	if hex.EncodeToString(sum[:]) != info.ZipSHA256 {
		return "", fmt.Errorf("the %s zip does not match the registry's record", flowgenmod.Path)
	}
	if err := signing.Verify(pub, zipData, []byte(info.Signature)); err != nil {
		return "", fmt.Errorf("the %s zip is not signed by the registry's key: %w", flowgenmod.Path, err)
	}
	// The .mod is the signed zip's own go.mod, never a download of its
	// own: every byte placed is covered by the signature checked above.
	modData, err := artifact.ZipFile(zipData, flowgenmod.Path+"@"+want+"/go.mod")
	if err != nil {
		return "", fmt.Errorf("the signed %s zip: %w", flowgenmod.Path, err)
	}
	if _, err := placeProxyVersion(dir, flowgenmod.Path, want, zipData, modData, time.Time{}); err != nil {
		return "", err
	}
	return want, nil
}
