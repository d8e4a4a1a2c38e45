package main

import (
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"text/template"

	"github.com/flowgen-dev/flowgen/connectorspec"
	"github.com/flowgen-dev/flowgen/gen"
	"github.com/flowgen-dev/flowgen/templates"
)

const initUsage = `Usage: flowgen init connector ID [--dir DIR] [--provider NAME]

Scaffolds a connector package for the dotted connector id ID (for example
payments.charge) in DIR (default: the id's last segment, under the current
directory): connector.yaml with one input, one output and a fixture;
fixtures/, with a second fixture in a file of its own; doc.go with the
go:generate line; and connector.go, whose Run compiles and returns a "not
implemented" error until you write it. The generated files are
written right away, so the package builds at once. Existing files are never
overwritten: init fails and writes nothing if any would be.

The go:generate line runs "go tool flowgen gen", so declare flowgen in your
module's tool block once:

	go get -tool github.com/flowgen-dev/flowgen/cmd/flowgen

Flags:
`

var idRE = regexp.MustCompile(connectorspec.IDPattern)

func runInit(e *env, args []string) int {
	fs := newFlagSet(e, "init", initUsage)
	dir := fs.String("dir", "", "directory of the new package (default: the id's last segment)")
	provider := fs.String("provider", "TODO", "who operates the system the connector talks to")
	rest, err := parseFlags(fs, args)
	if err != nil {
		return flagExit(err)
	}
	if len(rest) != 2 || rest[0] != "connector" {
		fmt.Fprint(e.stderr, "flowgen init: want: flowgen init connector ID\n\n")
		fs.Usage()
		return exitUsage
	}
	id := rest[1]
	if !idRE.MatchString(id) {
		fmt.Fprintf(e.stderr, "flowgen init: %q is not a connector id: use lower-case dotted words such as payments.charge\n", id)
		return exitUsage
	}
	segments := strings.Split(id, ".")
	if *dir == "" {
		*dir = strings.ReplaceAll(segments[len(segments)-1], "_", "")
	}
	data := struct{ ID, Package, Provider string }{id, gen.PackageName(filepath.Base(absOr(*dir))), *provider}
	files, err := renderTemplates(templates.Connector(), *dir, data)
	if err != nil {
		fmt.Fprintf(e.stderr, "flowgen init: %v\n", err)
		return exitUsage
	}
	for _, f := range files {
		if _, err := os.Stat(f.Path); err == nil {
			fmt.Fprintf(e.stderr, "flowgen init: %s already exists; nothing written\n", f.Path)
			return exitUsage
		}
	}
	for _, f := range files {
		if err := os.MkdirAll(filepath.Dir(f.Path), 0o755); err != nil {
			fmt.Fprintf(e.stderr, "flowgen init: %v\n", err)
			return exitUsage
		}
	}
	if _, err := gen.Write(files); err != nil {
		fmt.Fprintf(e.stderr, "flowgen init: %v\n", err)
		return exitUsage
	}
	for _, f := range files {
		fmt.Fprintf(e.stdout, "wrote %s\n", filepath.ToSlash(f.Path))
	}
	if code := runGen(e, []string{*dir}); code != exitOK {
		return code
	}
	fmt.Fprintf(e.stderr, "next: edit %s, run go generate ./..., write Run in %s, then go test ./...\n",
		filepath.ToSlash(filepath.Join(*dir, connectorspec.FileName)), filepath.ToSlash(filepath.Join(*dir, "connector.go")))
	return exitOK
}

func absOr(dir string) string {
	if abs, err := filepath.Abs(dir); err == nil {
		return abs
	}
	return dir
}

// renderTemplates executes every .tmpl file of tree with data, naming each
// output after its template without the suffix, under dir.
func renderTemplates(tree fs.FS, dir string, data any) ([]gen.Generated, error) {
	var out []gen.Generated
	err := fs.WalkDir(tree, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".tmpl") {
			return err
		}
		src, err := fs.ReadFile(tree, p)
		if err != nil {
			return err
		}
		t, err := template.New(p).Option("missingkey=error").Parse(string(src))
		if err != nil {
			return fmt.Errorf("template %s: %w", p, err)
		}
		var b bytes.Buffer
		if err := t.Execute(&b, data); err != nil {
			return fmt.Errorf("template %s: %w", p, err)
		}
		out = append(out, gen.Generated{Path: filepath.Join(dir, filepath.FromSlash(strings.TrimSuffix(p, ".tmpl"))), Data: b.Bytes()})
		return nil
	})
	return out, err
}
