package main

import (
	"fmt"
	"sort"
	"strings"

	"github.com/flowgen-dev/flowgen/schemas"
)

const schemaUsage = `Usage: flowgen schema connectorspec|flowir

(connector and flow name the same two formats.)

Prints the JSON Schema (draft 2020-12) of a flowgen file format, the same
document published in schemas/. Point your editor's YAML language server at
it to validate files as you type.
`

func runSchema(e *env, args []string) int {
	fs := newFlagSet(e, "schema", schemaUsage)
	rest, err := parseFlags(fs, args)
	if err != nil {
		return flagExit(err)
	}
	var names []string
	for name := range schemas.Published {
		names = append(names, strings.TrimSuffix(name, ".schema.json"))
	}
	sort.Strings(names)
	if len(rest) != 1 {
		fmt.Fprintf(e.stderr, "flowgen schema: name one format: %s\n", strings.Join(names, ", "))
		return exitUsage
	}
	format := rest[0]
	if alias, ok := map[string]string{"connector": "connectorspec", "flow": "flowir"}[format]; ok {
		format = alias
	}
	gen, ok := schemas.Published[format+".schema.json"]
	if !ok {
		fmt.Fprintf(e.stderr, "flowgen schema: unknown format %q (want %s)\n", rest[0], strings.Join(names, ", "))
		return exitUsage
	}
	data, err := gen()
	if err != nil {
		fmt.Fprintf(e.stderr, "flowgen schema: %v\n", err)
		return exitUsage
	}
	_, err = e.stdout.Write(data)
	if err != nil {
		return exitUsage
	}
	return exitOK
}
