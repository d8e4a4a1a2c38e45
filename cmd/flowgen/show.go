package main

import (
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/flowgen-dev/flowgen/connectorspec"
	"github.com/flowgen-dev/flowgen/flowir"
)

const showUsage = `Usage: flowgen show [PATH...]

Validates the ConnectorSpec and Flow files under each PATH (default:
examples) and describes them: each connector's effects, determinism,
capabilities, ports, idempotency, retry owner and fixtures, and each flow's
nodes and edges. Diagnostics are printed first, as flowgen validate does.

Exit status: 0 no errors, 1 errors found, 2 usage or I/O error.
`

func runShow(e *env, args []string) int {
	fs := newFlagSet(e, "show", showUsage)
	paths, err := parseFlags(fs, args)
	if err != nil {
		return flagExit(err)
	}
	if len(paths) == 0 {
		paths = []string{"examples"}
	}
	w, err := load(paths)
	if err != nil {
		fmt.Fprintf(e.stderr, "flowgen show: %v\n", err)
		return exitUsage
	}
	if err := w.diags.WriteText(e.stderr); err != nil {
		return exitUsage
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Connectors (%d)\n", len(w.specs))
	for _, s := range w.specs {
		describeSpec(&b, s)
	}
	fmt.Fprintf(&b, "\nFlows (%d)\n", len(w.flows))
	for _, g := range w.flows {
		describeFlow(&b, g)
	}
	io.WriteString(e.stdout, b.String())
	fmt.Fprintln(e.stderr, summary(w))
	if w.diags.HasErrors() {
		return exitProblems
	}
	return exitOK
}

func describeSpec(b *strings.Builder, s *connectorspec.Spec) {
	fmt.Fprintf(b, "\n  %s@%s  (%s)\n", s.ID, s.Version, s.File)
	fmt.Fprintf(b, "    %s\n", s.Summary)
	fmt.Fprintf(b, "    effects %s, determinism %s", s.Effects, s.Determinism)
	if s.Retry != nil {
		fmt.Fprintf(b, ", retries owned by %s", s.Retry.Owner)
	}
	b.WriteString("\n")
	if len(s.Capabilities) > 0 {
		var caps []string
		for _, c := range s.Capabilities {
			caps = append(caps, strings.TrimSpace(string(c.Name)+" "+c.Version))
		}
		fmt.Fprintf(b, "    capabilities: %s\n", strings.Join(caps, ", "))
	}
	fmt.Fprintf(b, "    inputs: %s; outputs: %s\n", portList(s.Inputs), portList(s.Outputs))
	if s.Idempotency != nil {
		fmt.Fprintf(b, "    idempotency key: %s (scope %s)\n", strings.Join(s.Idempotency.Key, ", "), s.Idempotency.Scope)
	}
	if len(s.Egress) > 0 {
		fmt.Fprintf(b, "    egress: %s\n", strings.Join(s.Egress, ", "))
	}
	if s.Compensation != nil {
		fmt.Fprintf(b, "    compensated by %s (undo key %s)\n", s.Compensation.Connector, strings.Join(s.Compensation.UndoKey, ", "))
	}
	if len(s.Fixtures) > 0 {
		var names []string
		for _, f := range s.Fixtures {
			names = append(names, f.Name)
		}
		fmt.Fprintf(b, "    fixtures: %s\n", strings.Join(names, ", "))
	}
}

func portList[V any](ports map[string]V) string {
	names := make([]string, 0, len(ports))
	for n := range ports {
		names = append(names, n)
	}
	sort.Strings(names)
	return strings.Join(names, ", ")
}

func describeFlow(b *strings.Builder, g *flowir.Graph) {
	f := g.Flow
	fmt.Fprintf(b, "\n  %s@%s  %s  (%s)\n", f.ID, f.Version, f.Name, f.File)
	for _, n := range g.Nodes {
		what := n.Kind().String()
		switch {
		case n.Spec != nil:
			what = fmt.Sprintf("%s@%s  %s/%s", n.Spec.ID, n.Spec.Version, n.Effects(), n.Determinism())
		case n.ForEach != nil:
			what = fmt.Sprintf("forEach %s -> %s (aggregate %s)", n.ForEach.Items, n.ForEach.Do, aggregateName(n.ForEach.Aggregate))
		case n.Switch != nil:
			what = fmt.Sprintf("switch on %s: %s", n.Switch.On, portList(n.Out))
		case n.Checkpoint != nil:
			what = fmt.Sprintf("checkpoint %q", n.Checkpoint.Prompt)
		case n.Subflow != nil:
			what = fmt.Sprintf("subflow %s", n.Subflow.Flow)
		}
		fmt.Fprintf(b, "    node %-12s %s\n", n.Alias, what)
	}
	for _, e := range g.Edges {
		fmt.Fprintf(b, "    edge %s.%s -> %s.%s  %s\n", e.From.Alias, e.FromPort, e.To.Alias, e.ToPort, e.Delivery)
	}
}

func aggregateName(a flowir.Aggregate) string {
	t, _ := a.MarshalText()
	return string(t)
}
