package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/flowgen-dev/flowgen/examples/standins"
)

// The confined stage runs the order flow again, this time in a Go module
// of the platform team's own, with the payment connectors it pulled from
// the registry: payments.charge and its compensator payments.refund run
// as their certified WebAssembly modules, every other node natively from
// this checkout.

// ordersModule is the platform team's module, with the pulled connectors
// inside it.
func (d *demo) ordersModule() string { return filepath.Join(d.work, "orders") }

// pulledDir is where the demo pulls connectors to.
func (d *demo) pulledDir() string { return filepath.Join(d.ordersModule(), "pulled") }

// confinedConnectors are the pulled ones; the flow takes the others from
// examples/connectors.
var confinedConnectors = map[string]string{"charge": "payments/payments.charge@2.1.0", "refund": "payments/payments.refund@1.0.3"}

func (d *demo) runConfined(ctx context.Context) (string, error) {
	if _, _, err := d.flowgen(ctx, d.registryEnv(), "pull", "--key", filepath.Join(d.regData, "registry.pub"),
		"--dir", d.pulledDir(), confinedConnectors["refund"]); err != nil {
		return "", err
	}
	root := d.ordersModule()
	flowDir := filepath.Join(root, "fulfilment")
	if err := os.MkdirAll(flowDir, 0o755); err != nil {
		return "", err
	}
	gomod := fmt.Sprintf("module example.com/demo-orders\n\ngo 1.26\n\nrequire github.com/flowgen-dev/flowgen v0.0.0-00010101000000-000000000000\n\nreplace github.com/flowgen-dev/flowgen => %s\n", d.repo)
	gosum, err := os.ReadFile(filepath.Join(d.repo, "go.sum"))
	if err != nil {
		return "", err
	}
	flow, err := d.confinedFlow(flowDir)
	if err != nil {
		return "", err
	}
	input, err := d.confinedInput()
	if err != nil {
		return "", err
	}
	for name, data := range map[string][]byte{
		filepath.Join(root, "order.json"):               input,
		filepath.Join(root, "go.mod"):                   []byte(gomod),
		filepath.Join(root, "go.sum"):                   gosum,
		filepath.Join(flowDir, "doc.go"):                []byte("// Package fulfilment is the platform team's order flow.\npackage fulfilment\n"),
		filepath.Join(flowDir, "order-fulfilment.yaml"): flow,
	} {
		if err := os.WriteFile(name, data, 0o644); err != nil {
			return "", err
		}
	}
	env := []string{"GOWORK=off", "GOFLAGS=-mod=mod"}
	flowgen := filepath.Join(d.bin, "flowgen")
	if _, _, err := d.command(ctx, root, env, flowgen, "gen", "fulfilment"); err != nil {
		return "", err
	}
	generated, err := os.ReadFile(filepath.Join(flowDir, "order_fulfilment_gen.go"))
	if err != nil {
		return "", err
	}
	for _, pkg := range []string{"connectors/charge", "connectors/refund"} {
		if strings.Contains(string(generated), pkg+`"`) {
			return "", fmt.Errorf("the generated flow imports the pulled %s package: it would run natively", pkg)
		}
	}
	if n := strings.Count(string(generated), "runtime.Confined{"); n != 2 {
		return "", fmt.Errorf("the generated flow has %d confined modules, want 2 (charge and its compensator)", n)
	}

	charges := len(d.apis.Counts().Charges)
	env = append(append(env, standins.Env(d.apisAddr)...), "FLOWGEN_DATABASE_URL="+d.schemaURL)
	stdout, stderr, err := d.command(ctx, root, env, flowgen, "run", "--store", filepath.Join(d.work, "orders.db"), "--blobs", filepath.Join(d.work, "blobs"),
		"--input", "order.json", "fulfilment/order-fulfilment.yaml")
	if err != nil {
		return "", err
	}
	var status struct {
		Job   string `json:"job"`
		State string `json:"state"`
	}
	if err := json.Unmarshal([]byte(stdout), &status); err != nil || status.State != "succeeded" {
		return "", fmt.Errorf("the job did not succeed: %v\n%s%s", err, stdout, stderr)
	}
	var loaded []string
	for _, line := range strings.Split(stderr, "\n") {
		if strings.Contains(line, "confined connector loaded") {
			loaded = append(loaded, line)
		}
	}
	if len(loaded) != 2 {
		return "", fmt.Errorf("the engine loaded %d confined modules, want 2:\n%s", len(loaded), stderr)
	}
	fmt.Fprintf(d.out, "%s\n", indent(strings.Join(loaded, "\n"), "        "))
	if got := len(d.apis.Counts().Charges) - charges; got != 1 {
		return "", fmt.Errorf("the confined charge made %d charges at the payment API, want 1", got)
	}
	return fmt.Sprintf("job %s succeeded in %s with payments.charge and payments.refund pulled and run confined (1 charge through the host's http.write)", status.Job, root), nil
}

// confinedFlow is the example order flow for a module in flowDir: its
// connectors are the pulled ones and the other examples, by relative
// path.
func (d *demo) confinedFlow(flowDir string) ([]byte, error) {
	src, err := os.ReadFile(filepath.Join(d.repo, "examples/flows/order-fulfilment.yaml"))
	if err != nil {
		return nil, err
	}
	dirs, err := filepath.Glob(filepath.Join(d.repo, "examples/connectors/*/connector.yaml"))
	if err != nil {
		return nil, err
	}
	pulled, _ := filepath.Rel(flowDir, d.pulledDir())
	list := []string{filepath.ToSlash(pulled)}
	for _, spec := range dirs {
		dir := filepath.Dir(spec)
		if _, ok := confinedConnectors[filepath.Base(dir)]; ok {
			continue
		}
		rel, err := filepath.Rel(flowDir, dir)
		if err != nil {
			return nil, err
		}
		list = append(list, filepath.ToSlash(rel))
	}
	const line = "connectors: [../connectors]\n"
	if !strings.Contains(string(src), line) {
		return nil, fmt.Errorf("examples/flows/order-fulfilment.yaml has no %q line to replace", strings.TrimSpace(line))
	}
	return []byte(strings.Replace(string(src), line, "connectors: ["+strings.Join(list, ", ")+"]\n", 1)), nil
}

// confinedInput is the example order under an order id of its own, so
// that the payment API and the warehouse table see a new order.
func (d *demo) confinedInput() ([]byte, error) {
	data, err := os.ReadFile(filepath.Join(d.repo, "examples/flows/order.json"))
	if err != nil {
		return nil, err
	}
	var order map[string]any
	if err := json.Unmarshal(data, &order); err != nil {
		return nil, err
	}
	order["order_id"] = "ord-2001"
	return json.MarshalIndent(order, "", "  ")
}
