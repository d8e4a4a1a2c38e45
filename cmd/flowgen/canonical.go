package main

import (
	"fmt"

	"github.com/flowgen-dev/flowgen/connectorspec"
	"github.com/flowgen-dev/flowgen/diag"
	"github.com/flowgen-dev/flowgen/flowir"
	"github.com/flowgen-dev/flowgen/internal/strictyaml"
)

const canonicalUsage = `Usage: flowgen canonical FILE

Prints a ConnectorSpec or Flow file (YAML or JSON) in its canonical JSON form:
the document schemas/*.schema.json describe, with fields in a fixed order,
map keys sorted and defaults left out, identical byte for byte for files that
mean the same. The file must parse without errors; run flowgen validate for
the full checks.

Exit status: 0 printed, 1 the file has errors, 2 usage or I/O error.
`

func runCanonical(e *env, args []string) int {
	fs := newFlagSet(e, "canonical", canonicalUsage)
	rest, err := parseFlags(fs, args)
	if err != nil {
		return flagExit(err)
	}
	if len(rest) != 1 {
		fmt.Fprint(e.stderr, "flowgen canonical: name exactly one file\n\n")
		fs.Usage()
		return exitUsage
	}
	path := rest[0]
	data, err := strictyaml.ReadFile(path)
	if err != nil {
		fmt.Fprintf(e.stderr, "flowgen canonical: %v\n", err)
		return exitUsage
	}
	var doc any
	var diags diag.List
	switch flowir.FileKind(data) {
	case connectorspec.Kind:
		doc, diags = connectorspec.Parse(path, data)
	case flowir.Kind:
		doc, diags = flowir.ParseFlow(path, data)
	default:
		fmt.Fprintf(e.stderr, "flowgen canonical: %s is not a ConnectorSpec or Flow file\n", path)
		return exitUsage
	}
	if diags.HasErrors() { // a nil document always comes with errors
		diags.WriteText(e.stdout)
		return exitProblems
	}
	out, err := strictyaml.CanonicalJSON(doc)
	if err != nil {
		fmt.Fprintf(e.stderr, "flowgen canonical: %v\n", err)
		return exitUsage
	}
	if _, err := e.stdout.Write(out); err != nil {
		return exitUsage
	}
	return exitOK
}
