package flowir

import (
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/Masterminds/semver/v3"
	"github.com/goccy/go-yaml/ast"

	"github.com/flowgen-dev/flowgen/connectorspec"
	"github.com/flowgen-dev/flowgen/diag"
	"github.com/flowgen-dev/flowgen/flowtype"
	"github.com/flowgen-dev/flowgen/internal/strictyaml"
)

var (
	flowIDPattern = regexp.MustCompile(connectorspec.IDPattern)
	aliasPattern  = regexp.MustCompile(`^[a-z][a-z0-9_]*$`)
)

// Loader loads flows and the connector specs they use. Each file is read and
// checked once, and its diagnostics are returned once, however many flows
// use it. A Loader is not safe for concurrent use.
type Loader struct {
	// Catalog holds every structurally sound spec loaded; flows resolve
	// uses: id@range against it.
	Catalog *connectorspec.Catalog
	specs   map[string]*connectorspec.Spec
	flows   map[string]*Graph
	sagas   map[*connectorspec.Spec]bool // specs whose compensator was checked
}

// NewLoader returns a loader with an empty catalogue.
func NewLoader() *Loader {
	return &Loader{Catalog: connectorspec.NewCatalog(), specs: map[string]*connectorspec.Spec{}, flows: map[string]*Graph{}, sagas: map[*connectorspec.Spec]bool{}}
}

// FileKind identifies a flowgen file by its header: connectorspec.Kind,
// Kind, or "" for anything else. A file that does not parse is still
// recognised when its top-level header lines say it is a flowgen file, so
// that its syntax errors are reported rather than the file being skipped.
func FileKind(data []byte) string {
	if !bytes.Contains(data, []byte("apiVersion")) || !bytes.Contains(data, []byte("kind")) {
		return ""
	}
	root, diags := strictyaml.Parse("", data)
	if diags.HasErrors() {
		return headerLinesKind(data)
	}
	var kv []*ast.MappingValueNode
	switch m := root.(type) {
	case *ast.MappingNode:
		kv = m.Values
	case *ast.MappingValueNode:
		kv = []*ast.MappingValueNode{m}
	}
	api, kind := "", ""
	for _, p := range kv {
		v, ok := p.Value.(*ast.StringNode)
		if !ok {
			continue
		}
		key := p.Key.String()
		if k, ok := p.Key.(*ast.StringNode); ok {
			key = k.Value // unquoted, as JSON keys are
		}
		switch key {
		case "apiVersion":
			api = v.Value
		case "kind":
			kind = v.Value
		}
	}
	if !strings.HasPrefix(api, "flowgen.dev/") {
		return ""
	}
	return kind
}

// headerLineRE matches a top-level "apiVersion: ..." or "kind: ..." line of
// YAML, or the same pair in a single-line-per-key JSON object.
var headerLineRE = regexp.MustCompile(`(?m)^(?:\s*")?(apiVersion|kind)"?\s*:\s*"?([A-Za-z0-9./]+)"?`)

// headerLinesKind is FileKind for files that do not parse.
func headerLinesKind(data []byte) string {
	api, kind := "", ""
	for _, m := range headerLineRE.FindAllSubmatch(data, -1) {
		switch string(m[1]) {
		case "apiVersion":
			if api == "" {
				api = string(m[2])
			}
		case "kind":
			if kind == "" {
				kind = string(m[2])
			}
		}
	}
	if !strings.HasPrefix(api, "flowgen.dev/") {
		return ""
	}
	return kind
}

// LoadSpec loads the spec at path once. Its diagnostics are returned on the
// first call only.
func (l *Loader) LoadSpec(path string) (*connectorspec.Spec, diag.List) {
	abs := absPath(path)
	if s, ok := l.specs[abs]; ok {
		return s, nil
	}
	s, diags := connectorspec.Load(path)
	l.specs[abs] = s
	if s != nil && structurallySound(diags) {
		if err := l.Catalog.Add(s); err != nil {
			diags.Add(s.At("version"), diag.FMT004, "bump the version of one of them", "%v", err)
		}
	}
	return s, diags
}

// structurallySound reports whether a spec's diagnostics leave its shape
// intact: it parsed, its header, fields and schemas are valid. Such a spec
// joins the catalogue even when a semantic check failed, so that flows using
// it are still checked and one run reports every problem.
func structurallySound(diags diag.List) bool {
	for _, d := range diags {
		if d.Severity == diag.Error && (strings.HasPrefix(string(d.Code), "FMT") || strings.HasPrefix(string(d.Code), "SCHEMA")) {
			return false
		}
	}
	return true
}

// LoadSpecs loads every ConnectorSpec file below dir (or dir itself, when it
// is a file).
func (l *Loader) LoadSpecs(dir string) diag.List {
	var diags diag.List
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() || !IsSourceFile(path) {
			return nil
		}
		data, err := strictyaml.ReadFile(path)
		if err != nil {
			return err
		}
		if FileKind(data) == connectorspec.Kind {
			_, ds := l.LoadSpec(path)
			diags.Append(ds)
		}
		return nil
	})
	if err != nil {
		diags.Add(diag.Pos{File: dir}, diag.FMT001, "list directories that exist under connectors:, relative to the flow file", "cannot read connectors: %v", err)
	}
	return diags
}

// IsSourceFile reports whether path has an extension flowgen reads.
func IsSourceFile(path string) bool {
	switch filepath.Ext(path) {
	case ".yaml", ".yml", ".json":
		return true
	}
	return false
}

// LoadFlow loads, resolves and validates the flow at path, with the connector
// directories it names. The Graph is nil only when the file could not be
// parsed.
func (l *Loader) LoadFlow(path string) (*Graph, diag.List) {
	var diags diag.List
	g := l.loadFlow(path, nil, &diags)
	diags.Sort()
	return g, diags
}

// CheckFlow is LoadFlow for a flow whose bytes are already in memory; path
// names the file in diagnostics and anchors the relative paths it holds.
func (l *Loader) CheckFlow(path string, data []byte) (*Graph, diag.List) {
	var diags diag.List
	g := l.checkFlow(path, data, nil, &diags)
	diags.Sort()
	return g, diags
}

func (l *Loader) loadFlow(path string, stack []string, diags *diag.List) *Graph {
	if g, ok := l.flows[absPath(path)]; ok {
		return g
	}
	data, err := strictyaml.ReadFile(path)
	if err != nil {
		diags.Add(diag.Pos{File: path}, diag.FMT001, "", "cannot read flow: %v", err)
		return nil
	}
	return l.checkFlow(path, data, stack, diags)
}

func (l *Loader) checkFlow(path string, data []byte, stack []string, diags *diag.List) *Graph {
	f, ds := ParseFlow(path, data)
	diags.Append(ds)
	if f == nil {
		return nil
	}
	dir := filepath.Dir(path)
	for _, c := range f.Connectors {
		diags.Append(l.LoadSpecs(resolvePath(dir, c)))
	}
	g := &Graph{Flow: f, byAlias: map[string]*GraphNode{}, loader: l}
	abs := absPath(path)
	l.flows[abs] = g
	r := resolver{l: l, g: g, diags: diags, dir: dir, stack: append(stack, abs)}
	r.resolve()
	for _, p := range Passes {
		p.Run(g, diags)
	}
	r.schedules()
	return g
}

// resolvePath interprets a slash-separated path written in a flow: relative
// to the flow's directory unless absolute.
func resolvePath(dir, p string) string {
	p = filepath.FromSlash(p)
	if filepath.IsAbs(p) {
		return p
	}
	return filepath.Join(dir, p)
}

// absPath is filepath.Abs, falling back to path itself when the working
// directory is unknown; it keys the loader's caches.
func absPath(path string) string {
	if abs, err := filepath.Abs(path); err == nil {
		return abs
	}
	return path
}

// ParseFlow decodes a flow file without resolving connectors: syntax, fields,
// header, ids and aliases.
func ParseFlow(path string, data []byte) (*Flow, diag.List) {
	var f Flow
	root, diags := strictyaml.Unmarshal(path, data, &f)
	if root == nil {
		return nil, diags
	}
	f.File = path
	connectorspec.CheckHeader(&diags, f.Source, f.APIVersion, f.Kind, Kind)
	if f.ID != "" && !flowIDPattern.MatchString(f.ID) {
		diags.Add(f.At("id"), diag.FMT006, "use lower-case dotted words such as orders.fulfilment", "invalid flow id %q", f.ID)
	}
	if f.Version != "" {
		if _, err := semver.StrictNewVersion(f.Version); err != nil {
			diags.Add(f.At("version"), diag.FMT006, "write a semantic version such as 1.0.0", "invalid version %q: %v", f.Version, err)
		}
	}
	for _, n := range f.Nodes {
		if n == nil {
			continue
		}
		if n.Alias != "" && !aliasPattern.MatchString(n.Alias) {
			diags.Add(n.At("alias"), diag.FMT006, "use lower-case letters, digits and underscores, starting with a letter", "invalid alias %q", n.Alias)
		}
		if n.Kind() == KindInvalid {
			diags.Add(n.Pos, diag.FMT006, "keep exactly one of: uses, spec, switch, forEach, subflow, checkpoint",
				"node %q must have exactly one of uses, spec, switch, forEach, subflow or checkpoint", n.Alias)
		}
	}
	return &f, diags
}

// Graph is a resolved flow: nodes with their connector specs, subflows and
// port schemas, and edges with their endpoints.
type Graph struct {
	Flow  *Flow
	Nodes []*GraphNode
	Edges []*GraphEdge

	byAlias map[string]*GraphNode
	loader  *Loader
}

// Node returns the node with the given alias, or nil.
func (g *Graph) Node(alias string) *GraphNode { return g.byAlias[alias] }

// resolver builds a Graph from a parsed flow.
type resolver struct {
	l     *Loader
	g     *Graph
	diags *diag.List
	dir   string
	stack []string // absolute paths of the flows being loaded, outermost first
}

func (r *resolver) resolve() {
	f := r.g.Flow
	r.budget(f.Policies.Budget)
	if f.Policies.Retention < 0 {
		r.diags.Add(f.Policies.At("retention"), diag.FMT006, "use a positive duration, or leave it out for the worker's default",
			"retention %s is negative", f.Policies.Retention)
	}
	for _, n := range f.Nodes {
		if n == nil {
			continue
		}
		gn := &GraphNode{Node: n, In: map[string]*Port{}, Out: map[string]*Port{}, index: len(r.g.Nodes)}
		if first, dup := r.g.byAlias[n.Alias]; dup {
			r.diags.Add(n.At("alias"), diag.DAG205, "rename one of the two nodes",
				"duplicate alias %q (first used at line %d)", n.Alias, first.At("alias").Line)
			continue
		}
		r.g.byAlias[n.Alias] = gn
		r.g.Nodes = append(r.g.Nodes, gn)
	}
	for _, gn := range r.g.Nodes {
		r.ports(gn)
	}
	for _, gn := range r.g.Nodes {
		if fe := gn.ForEach; fe != nil {
			body := r.g.byAlias[fe.Do]
			switch {
			case body == nil:
				r.diags.Add(fe.At("do"), diag.DAG202, r.aliasHint(fe.Do), "forEach body %q is not a node of this flow", fe.Do)
			case body.Kind() != KindConnector && body.Kind() != KindInline && body.Kind() != KindSubflow:
				r.diags.Add(fe.At("do"), diag.FMT006, "point do: at a connector, inline function or subflow node",
					"forEach body %q is a %s node", fe.Do, body.Kind())
			default:
				gn.Body, body.BodyOf = body, gn
			}
		}
	}
	for _, e := range f.Edges {
		if e != nil {
			r.edge(e)
		}
	}
}

// aliasHint suggests the aliases a misspelt one may have meant.
func (r *resolver) aliasHint(alias string) string {
	var names []string
	for _, n := range r.g.Nodes {
		names = append(names, n.Alias)
	}
	slices.Sort(names)
	return "aliases in this flow: " + strings.Join(names, ", ")
}

// ports resolves what a node runs and declares its ports.
func (r *resolver) ports(gn *GraphNode) {
	n := gn.Node
	r.heartbeatTimeout(n)
	switch n.Kind() {
	case KindConnector:
		spec := r.connector(n)
		if spec == nil {
			return
		}
		gn.Spec = spec
		gn.Confined = r.runMode(n, spec)
		for name := range spec.Inputs {
			gn.In[name] = &Port{Schema: spec.InputSchema(name), Typed: spec.InputSchema(name) != nil}
		}
		for name := range spec.Outputs {
			gn.Out[name] = &Port{Schema: spec.OutputSchema(name), Typed: spec.OutputSchema(name) != nil}
		}
	case KindInline:
		gn.In["in"], gn.Out["out"] = &Port{}, &Port{}
	case KindSwitch:
		gn.In["in"] = &Port{}
		labels := map[string]diag.Pos{}
		for _, c := range n.Switch.Cases {
			if first, dup := labels[c.Label]; dup {
				r.diags.Add(c.At("label"), diag.CTRL010, "give every case its own label", "duplicate case label %q (first at line %d)", c.Label, first.Line)
			}
			labels[c.Label] = c.At("label")
			gn.Out[c.Label] = &Port{}
		}
		if n.Switch.Default != "" {
			gn.Out[n.Switch.Default] = &Port{}
		}
	case KindCheckpoint:
		gn.In["in"], gn.Out["approved"], gn.Out["rejected"] = &Port{}, &Port{}, &Port{}
	case KindSleep:
		gn.In["in"], gn.Out["out"] = &Port{}, &Port{}
		if s := n.Sleep; (s.For > 0) == (s.Until != "") || s.For < 0 {
			r.diags.Add(n.At("sleep"), diag.FMT006, "give exactly one of a positive for: duration and an until: field path",
				"sleep %s needs exactly one of for and until", n.Alias)
		}
	case KindForEach:
		gn.In["in"], gn.Out["out"] = &Port{}, &Port{}
	case KindSubflow:
		r.subflow(gn)
	}
}

// connector resolves a connector node's spec (DAG206 when it cannot).
func (r *resolver) connector(n *Node) *connectorspec.Spec {
	if n.Spec != "" {
		path := resolvePath(r.dir, n.Spec)
		if _, err := os.Stat(path); err != nil {
			r.diags.Add(n.At("spec"), diag.DAG206, "correct the path; it is relative to the flow file", "connector spec %q not found", n.Spec)
			return nil
		}
		s, ds := r.l.LoadSpec(path)
		r.diags.Append(ds)
		return s
	}
	s, err := r.l.Catalog.Resolve(n.Uses)
	if err != nil {
		r.diags.Add(n.At("uses"), diag.DAG206, "add the directory holding the spec to connectors:, or fix the id and range",
			"cannot resolve connector %q: %v", n.Uses, err)
		return nil
	}
	return s
}

// runMode decides how a connector node runs: a pulled connector confined
// unless the node says run: native and its pull allowed it (CONF002),
// any other natively, since only a pulled one has a certified module
// (CONF001). It returns the pull record when the node runs confined.
func (r *resolver) runMode(n *Node, spec *connectorspec.Spec) *connectorspec.Pulled {
	pulled, err := connectorspec.PulledOf(spec)
	if err != nil {
		r.diags.Add(n.At("uses"), diag.CONF001, "pull the connector again (flowgen pull), which rewrites its record", "connector %s: %v", spec.ID, err)
		return nil
	}
	switch {
	case pulled == nil && n.Run == RunConfined:
		r.diags.Add(n.At("run"), diag.CONF001, "pull the connector from a registry (flowgen pull) and list its directory under connectors:, or remove run: confined",
			"node %s runs %s confined, but %s was not pulled with a certified module", n.Alias, spec.ID, spec.File)
	case pulled != nil && n.Run == RunNative && pulled.RequireConfined:
		r.diags.Add(n.At("run"), diag.CONF002, "remove run: native, or pull the connector under a policy with requireConfined: false",
			"node %s runs pulled connector %s %s natively, but it was pulled requiring it run confined", n.Alias, spec.ID, spec.Version)
	case pulled != nil && n.Run != RunNative:
		return pulled
	}
	return nil
}

// heartbeatTimeout reports a heartbeat timeout that is negative or on a
// node that runs no code of its own to heartbeat (FMT006).
func (r *resolver) heartbeatTimeout(n *Node) {
	switch {
	case n.HeartbeatTimeout == 0:
	case n.HeartbeatTimeout < 0:
		r.diags.Add(n.At("heartbeatTimeout"), diag.FMT006, "use a positive duration, or leave it out for no heartbeat check",
			"heartbeatTimeout %s is negative", n.HeartbeatTimeout)
	case n.Kind() != KindConnector && n.Kind() != KindInline:
		r.diags.Add(n.At("heartbeatTimeout"), diag.FMT006, "remove it: only connector and inline nodes run code that heartbeats",
			"heartbeatTimeout on a %s node", n.Kind())
	}
}

// budget reports negative limits (FMT006).
func (r *resolver) budget(b *Budget) {
	if b == nil {
		return
	}
	if b.Activations < 0 {
		r.diags.Add(b.At("activations"), diag.FMT006, "use a positive count, or leave it out for no limit", "budget activations %d is negative", b.Activations)
	}
	if b.Timeout < 0 {
		r.diags.Add(b.At("timeout"), diag.FMT006, "use a positive duration, or leave it out for no limit", "budget timeout %s is negative", b.Timeout)
	}
}

// subflow loads the child flow and exposes its listed entry ports and its
// terminal output ports.
func (r *resolver) subflow(gn *GraphNode) {
	sf := gn.Subflow
	r.budget(sf.Budget)
	path := resolvePath(r.dir, sf.Flow)
	abs := absPath(path)
	if slices.Contains(r.stack, abs) {
		r.diags.Add(sf.At("flow"), diag.SUB002, "break the recursion; a flow cannot contain itself",
			"subflow %q includes itself: %s", sf.Flow, strings.Join(relPaths(r.dir, slices.Concat(r.stack, []string{abs})), " -> "))
		return
	}
	limit := r.maxDepth()
	if len(r.stack) > limit {
		r.diags.Add(sf.At("flow"), diag.SUB002, fmt.Sprintf("flatten the nesting, or raise policies.maxSubflowDepth above %d", limit),
			"subflow %q is nested %d deep, deeper than the limit of %d", sf.Flow, len(r.stack), limit)
		return
	}
	if _, err := os.Stat(path); err != nil {
		r.diags.Add(sf.At("flow"), diag.DAG206, "correct the path; it is relative to the flow file", "subflow %q not found", sf.Flow)
		return
	}
	child := r.l.loadFlow(path, r.stack, r.diags)
	if child == nil {
		return
	}
	gn.Child = child
	for _, in := range sf.Inputs {
		alias, port, err := SplitPort(in)
		var p *Port
		if err == nil {
			if cn := child.byAlias[alias]; cn != nil {
				p = cn.In[port]
			}
		}
		if p == nil {
			r.diags.Add(sf.At("inputs"), diag.DAG203, "list entry ports of the child flow as alias.port",
				"subflow input %q is not an input port of %s", in, sf.Flow)
			continue
		}
		gn.In[in] = p
	}
	connected := map[string]bool{}
	for _, e := range child.Edges {
		connected[e.From.Alias+"."+e.FromPort] = true
	}
	for _, cn := range child.Nodes {
		for name, p := range cn.Out {
			if key := cn.Alias + "." + name; !connected[key] {
				gn.Out[key] = p
			}
		}
	}
}

// maxDepth is the subflow nesting limit: the outermost flow's policy wins.
func (r *resolver) maxDepth() int {
	if d := r.g.Flow.Policies.MaxSubflowDepth; d > 0 {
		return d
	}
	return DefaultMaxSubflowDepth
}

// relPaths names files relative to dir, so that messages read the same
// whatever the working directory.
func relPaths(dir string, ps []string) []string {
	base := absPath(dir)
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = p
		if rel, err := filepath.Rel(base, p); err == nil {
			out[i] = filepath.ToSlash(rel)
		}
	}
	return out
}

// edge resolves an edge's endpoints (DAG202, DAG203, CTRL010, SUB001) and
// refuses an ordering the runtime does not enforce (CTRL012).
func (r *resolver) edge(e *Edge) {
	if e.Has("ordering") && e.Ordering == flowtype.Ordered {
		r.diags.Add(e.At("ordering"), diag.CTRL012, "remove ordering: Ordered, or set ordering: Unordered, and do not rely on the order deliveries arrive in",
			"edge %s -> %s declares ordering Ordered, which the runtime does not enforce yet: its deliveries may run in parallel and in any order", e.From, e.To)
	}
	from, fromPort, okFrom := r.endpoint(e, "from", e.From)
	to, toPort, okTo := r.endpoint(e, "to", e.To)
	if !okFrom || !okTo {
		return
	}
	if _, ok := from.Out[fromPort]; !ok {
		switch {
		case from.Kind() == KindSwitch:
			r.diags.Add(e.At("from"), diag.CTRL010, "declare a case with this label, or set default: "+fromPort,
				"switch %q has no case labelled %q", from.Alias, fromPort)
		default:
			r.diags.Add(e.At("from"), diag.DAG203, portHint(from.Out, "output"), "%q has no output port %q", from.Alias, fromPort)
		}
		return
	}
	if _, ok := to.In[toPort]; !ok {
		if to.Kind() == KindSubflow && to.Child != nil {
			r.diags.Add(e.At("to"), diag.SUB001, fmt.Sprintf("add %q to the subflow's inputs if it may see this data", toPort),
				"subflow %q does not list %q among its inputs", to.Alias, toPort)
			return
		}
		r.diags.Add(e.At("to"), diag.DAG203, portHint(to.In, "input"), "%q has no input port %q", to.Alias, toPort)
		return
	}
	r.g.Edges = append(r.g.Edges, &GraphEdge{Edge: e, From: from, To: to, FromPort: fromPort, ToPort: toPort})
}

func (r *resolver) endpoint(e *Edge, field, ref string) (*GraphNode, string, bool) {
	alias, port, err := SplitPort(ref)
	if err != nil {
		r.diags.Add(e.At(field), diag.FMT006, "write alias.port, e.g. charge.out", "%s: %v", field, err)
		return nil, "", false
	}
	gn := r.g.byAlias[alias]
	if gn == nil {
		r.diags.Add(e.At(field), diag.DAG202, r.aliasHint(alias), "edge %s %q: no node has alias %q", field, ref, alias)
		return nil, "", false
	}
	if gn.Kind() == KindInvalid || (gn.Kind() == KindConnector && gn.Spec == nil) || (gn.Kind() == KindSubflow && gn.Child == nil) {
		return nil, "", false // already reported; nothing to check the port against
	}
	return gn, port, true
}

func portHint(ports map[string]*Port, what string) string {
	names := make([]string, 0, len(ports))
	for n := range ports {
		names = append(names, n)
	}
	slices.Sort(names)
	if len(names) == 0 {
		return "the node has no " + what + " ports"
	}
	return what + " ports: " + strings.Join(names, ", ")
}

// CheckCompensator resolves the compensator of s in the catalogue (DAG206)
// and checks that its input accepts s's output (SAGA201). Each spec is
// checked once per Loader; later calls return nothing.
func (l *Loader) CheckCompensator(s *connectorspec.Spec) diag.List {
	var diags diag.List
	comp := s.Compensation
	if comp == nil || l.sagas[s] {
		return nil
	}
	l.sagas[s] = true
	undo, err := l.Catalog.Resolve(comp.Connector)
	if err != nil {
		diags.Add(comp.At("connector"), diag.DAG206, "load the compensator's spec alongside this one", "cannot resolve compensator %q: %v", comp.Connector, err)
		return diags
	}
	out := s.OutputSchema(s.PrimaryOutputPort())
	in := undo.InputSchema(undo.PrimaryInputPort())
	if out == nil || in == nil {
		return nil
	}
	for _, m := range connectorspec.Compatible(out, in) {
		diags.Add(comp.At("connector"), diag.SAGA201, m.Fix, "compensator %s cannot take what %s produces: %s", undo.ID, s.ID, m)
	}
	return diags
}

// CheckCompensators checks every loaded spec's compensator (see
// CheckCompensator).
func (l *Loader) CheckCompensators() diag.List {
	var diags diag.List
	for _, s := range l.Catalog.Specs() {
		diags.Append(l.CheckCompensator(s))
	}
	return diags
}
