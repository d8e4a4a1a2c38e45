package runtime

import (
	"encoding/json"
	"fmt"
)

// Confined names a connector that runs as its certified WebAssembly
// module, confined to the capabilities its spec declares (see
// runtime/wasmhost): what an engine needs to find the module, check that
// it is the certified one, and run it.
type Confined struct {
	// Declaration is the connector's declaration, from its certified spec;
	// the module itself is never asked what it may do.
	Declaration Declaration
	// Digest is the certified module's digest ("sha256:<hex>"); a module
	// with other bytes is refused.
	Digest string
	// Path is the module file; a relative path is resolved against the
	// engine's module directory (engine.Options.ModuleDir).
	Path string
}

// ConfinedNode is the node of a confined connector, with JSON ports: flow
// wiring connects it with runtime.Reshape, its schemas having been proved
// compatible by the flow's validation. Its Run fails until an engine that
// runs modules (engine.Engine) registers the flow, which loads the module
// in its place.
func ConfinedNode(c Confined) TypedNode[json.RawMessage, json.RawMessage] {
	return TypedNode[json.RawMessage, json.RawMessage]{Runner: confinedRunner{c, c.Declaration.NodeInfo()}}
}

type confinedRunner struct {
	c    Confined
	info NodeInfo
}

func (r confinedRunner) Info() NodeInfo { return r.info }

func (r confinedRunner) Run(*Context, json.RawMessage, json.RawMessage) (json.RawMessage, error) {
	return nil, Errorf(PolicyDenied, "confined connector %s %s has no module loaded: register its flow with an engine that runs modules (runtime/engine)", r.c.Declaration.ID, r.c.Declaration.Version)
}

// ModuleLoader loads a confined connector's module as a Runner.
type ModuleLoader func(Confined) (Runner, error)

// LoadConfined returns f with every confined node, and every confined
// compensation, replaced by the Runner load gives for its module, under
// the same per-node options; f itself is unchanged. The first module that
// does not load fails it, naming the node.
func (f *Flow) LoadConfined(load ModuleLoader) (*Flow, error) {
	out := *f
	out.Nodes = make([]*FlowNode, len(f.Nodes))
	for i, n := range f.Nodes {
		copied := *n
		var err error
		if copied.Runner, err = loadRunner(n.Runner, load); err != nil {
			return nil, fmt.Errorf("node %s: %w", n.Alias, err)
		}
		if n.Compensate != nil {
			comp := *n.Compensate
			if comp.Runner, err = loadRunner(comp.Runner, load); err != nil {
				return nil, fmt.Errorf("node %s's compensation: %w", n.Alias, err)
			}
			copied.Compensate = &comp
		}
		out.Nodes[i] = &copied
	}
	return &out, nil
}

// loadRunner replaces a confined runner, also one under the flow's node
// options, with its module's.
func loadRunner(r Runner, load ModuleLoader) (Runner, error) {
	switch r := r.(type) {
	case confinedRunner:
		return load(r.c)
	case optionsRunner:
		inner, err := loadRunner(r.Runner, load)
		if err != nil {
			return nil, err
		}
		return optionsRunner{inner, r.opts}, nil
	}
	return r, nil
}
