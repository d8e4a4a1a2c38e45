// Package buildinfo says which build of a flowgen program is running.
package buildinfo

import (
	"runtime"
	"runtime/debug"
)

// Line is "<program> <version> [(<revision>[+modified])] <go version> <os>/<arch>":
// the module version, or "devel" for a build from a checkout, and the VCS
// revision when the build recorded one.
func Line(program string) string {
	version, rev := "devel", ""
	if bi, ok := debug.ReadBuildInfo(); ok {
		if v := bi.Main.Version; v != "" && v != "(devel)" {
			version = v
		}
		modified := false
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				rev = s.Value
			case "vcs.modified":
				modified = s.Value == "true"
			}
		}
		if rev != "" && modified {
			rev += "+modified"
		}
	}
	line := program + " " + version
	if rev != "" {
		line += " (" + rev + ")"
	}
	return line + " " + runtime.Version() + " " + runtime.GOOS + "/" + runtime.GOARCH
}
