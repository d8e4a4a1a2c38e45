package artifact

import (
	"errors"
	"fmt"
	"maps"
	"path"
	"slices"
	"strings"

	"golang.org/x/mod/modfile"
)

// ErrChangesBuild is the error of an artifact that ships a file or a
// go.mod directive with which it, rather than whoever builds it, would
// decide how it is built: which workspace, which copies of its
// dependencies, which toolchain, which runtime settings.
var ErrChangesBuild = errors.New("the artifact would change how it is built")

// checkBuildControls refuses, naming each file and line, what would let
// an artifact decide how certification builds it: a go.work or
// go.work.sum anywhere (a workspace nearer than certification's own
// replaces it, and with it the flowgen certification builds against), a
// vendor directory, and the go.mod directives toolchain, replace and
// godebug. A consumer building the module would see none of them either,
// so what was certified would not be what runs.
func checkBuildControls(files map[string][]byte) error {
	var problems []string
	for _, name := range slices.Sorted(maps.Keys(files)) {
		switch base := path.Base(name); {
		case base == "go.work" || base == "go.work.sum":
			problems = append(problems, name+": a workspace file would replace the workspace certification builds in; remove it")
		case strings.HasPrefix(name, "vendor/"):
			problems = append(problems, name+": a vendor directory would stand in for the module's requirements; remove vendor/")
		}
	}
	if data, ok := files["go.mod"]; ok {
		f, err := modfile.Parse("go.mod", data, nil)
		if err != nil {
			return fmt.Errorf("%w: %v", ErrChangesBuild, err)
		}
		if t := f.Toolchain; t != nil {
			problems = append(problems, fmt.Sprintf("go.mod:%d: toolchain %s: certification builds with its own toolchain; remove the toolchain line", t.Syntax.Start.Line, t.Name))
		}
		for _, r := range f.Replace {
			problems = append(problems, fmt.Sprintf("go.mod:%d: replace %s: a consumer of the module would not see it; require a published version instead", r.Syntax.Start.Line, r.Old.Path))
		}
		for _, g := range f.Godebug {
			problems = append(problems, fmt.Sprintf("go.mod:%d: godebug %s=%s: it changes the runtime of whoever builds the module; remove it", g.Syntax.Start.Line, g.Key, g.Value))
		}
	}
	if len(problems) > 0 {
		return fmt.Errorf("%w:\n\t%s", ErrChangesBuild, strings.Join(problems, "\n\t"))
	}
	return nil
}
