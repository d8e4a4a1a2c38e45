package main

import (
	"fmt"
	"path/filepath"

	"github.com/flowgen-dev/flowgen/artifact"
)

const packageUsage = `Usage: flowgen package [--out DIR] [--module PATH] CONNECTOR_DIR

Packs a connector into its artifact: a Go module zip (spec, generated and
hand-written code, fixtures, go.mod, go.sum, and the schema files the spec
refers to outside the directory) and a manifest. Writes DIR/artifact.zip and
DIR/artifact.json and prints the digest, the sha256 of the zip, which is the
artifact's identity. The same inputs always give the same digest.

A directory that is not the root of its own module becomes the module
` + artifact.ModulePrefix + `/<id with dots as slashes>[/vN] (--module
chooses another path). Its go.mod requires exactly the modules its
packages import, directly or not, at the versions your module builds
with, and flowgen at the version of the checkout or module you build
against (a checkout's version is derived from its content). A connector
that imports other packages of your module, or modules your go.mod
replaces, is refused with the fix: a consumer could not resolve them.

Flags:
`

func runPackage(e *env, args []string) int {
	fs := newFlagSet(e, "package", packageUsage)
	out := fs.String("out", "", "where to write artifact.zip and artifact.json (default CONNECTOR_DIR/certification)")
	mod := fs.String("module", "", "module path for a connector that is not a module root")
	rest, err := parseFlags(fs, args)
	if err != nil {
		return flagExit(err)
	}
	if len(rest) != 1 {
		fmt.Fprint(e.stderr, "flowgen package: name one CONNECTOR_DIR\n\n")
		fs.Usage()
		return exitUsage
	}
	if *out == "" {
		*out = filepath.Join(rest[0], "certification")
	}
	a, err := artifact.Build(rest[0], artifact.Options{Module: *mod})
	if err != nil {
		fmt.Fprintf(e.stderr, "flowgen %v\n", err)
		return exitProblems
	}
	zipPath, manifestPath, err := artifact.Write(a, *out, "artifact")
	if err != nil {
		fmt.Fprintf(e.stderr, "flowgen package: %v\n", err)
		return exitUsage
	}
	m := a.Manifest
	fmt.Fprintf(e.stdout, "%s@%s (%s %s): %d files, %d bytes\n%s\nwrote %s and %s\n",
		m.Module, m.Version, m.Connector, m.ConnectorVersion, len(m.Files), m.Size, m.Digest, zipPath, manifestPath)
	return exitOK
}
