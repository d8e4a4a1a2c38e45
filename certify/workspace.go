package certify

import (
	"errors"
	"fmt"
	"go/version"
	"os"
	"path/filepath"
	goruntime "runtime"

	"golang.org/x/mod/modfile"

	"github.com/flowgen-dev/flowgen/artifact"
	"github.com/flowgen-dev/flowgen/internal/flowgenmod"
)

// ErrToolchainTooOld: the artifact declares a Go version newer than the
// toolchain certification builds with.
var ErrToolchainTooOld = errors.New("the artifact needs a newer Go toolchain")

// minWorkspaceGo is the lowest go version a workspace declares.
const minWorkspaceGo = "1.26.0"

// Workspace lays the artifact out under root the way the registry
// certifies it, and returns the connector directory. A go.work at root
// uses the artifact's module and, when flowgenDir is set, builds flowgen
// from that directory (the checkout or module the certifier trusts); its
// go version is the artifact's own when this toolchain supports it (never
// below 1.26.0). An artifact that needs a newer Go fails with
// ErrToolchainTooOld before anything is built. flowgen certify and
// registryd both certify through Workspace, so a local pass is a registry
// pass.
func Workspace(a *artifact.Artifact, root, flowgenDir string) (string, error) {
	dir, err := artifact.Extract(a, root)
	if err != nil {
		return "", fmt.Errorf("the artifact does not unpack: %w", err)
	}
	goVersion := minWorkspaceGo
	gomodPath := filepath.Join(dir, "go.mod")
	data, err := os.ReadFile(gomodPath)
	if err != nil {
		return "", err
	}
	mf, err := modfile.ParseLax(gomodPath, data, nil)
	if err != nil {
		return "", fmt.Errorf("the artifact's go.mod: %w", err)
	}
	if mf.Go != nil && version.Compare("go"+mf.Go.Version, "go"+goVersion) > 0 {
		goVersion = mf.Go.Version
	}
	if have := goruntime.Version(); version.IsValid(have) && version.Compare("go"+goVersion, have) > 0 {
		return "", fmt.Errorf("%w: its go.mod says go %s, and certification here builds with %s; build it with go %s or older (the go line of its go.mod), or certify where Go %s is installed",
			ErrToolchainTooOld, goVersion, have, version.Lang(have), goVersion)
	}
	rel, err := filepath.Rel(root, dir)
	if err != nil {
		return "", err
	}
	gowork := fmt.Sprintf("go %s\n\nuse ./%s\n", goVersion, filepath.ToSlash(rel))
	if flowgenDir != "" {
		gowork += fmt.Sprintf("\nreplace %s => %s\n", flowgenmod.Path, flowgenDir)
	}
	if err := os.WriteFile(filepath.Join(root, "go.work"), []byte(gowork), 0o644); err != nil {
		return "", err
	}
	return dir, nil
}
