package gen

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/dave/jennifer/jen"
	"golang.org/x/tools/go/packages"

	"github.com/flowgen-dev/flowgen/connectorspec"
	"github.com/flowgen-dev/flowgen/diag"
	"github.com/flowgen-dev/flowgen/flowir"
	"github.com/flowgen-dev/flowgen/flowtype"
	"github.com/flowgen-dev/flowgen/internal/modpath"
	"github.com/flowgen-dev/flowgen/internal/strictyaml"
)

// goTypeID is a Go type by identity: aliases resolved to what they name.
type goTypeID struct{ pkg, name string }

// nodePort is the Go type at a node port: how generated code writes it
// and what it is.
type nodePort struct {
	code *jen.Statement
	id   goTypeID
}

// flowGen writes the constructor of one flow.
type flowGen struct {
	g      *flowir.Graph
	shared *sharedSet
	plans  map[*connectorspec.Spec]*plan
	diags  diag.List
	name   string // Go name of the flow, from its id

	pkg     *packages.Package // the flow's own package, for inline nodes
	pkgErr  error
	inlines map[*flowir.GraphNode]*inlineFunc
	// modules names the function that returns the runtime.Confined of
	// each node (by alias) or compensator (alias+"Undo") that runs
	// confined.
	modules map[string]string
}

// FlowFile names the file generated for the flow at path: its base name
// in snake case with a _gen.go suffix, next to it.
func FlowFile(path string) string {
	base := strings.TrimSuffix(filepath.Base(path), filepath.Ext(path))
	base = strings.NewReplacer("-", "_", ".", "_", " ", "_").Replace(strings.ToLower(base))
	return filepath.Join(filepath.Dir(path), base+"_gen.go")
}

// Flow generates the typed constructor of a flow loaded without errors:
// NewX builds the runtime.Flow from the implementations in XConnectors,
// connecting nodes with runtime.Connect so that an edge between different
// Go types does not compile; edges whose schemas flowir proved compatible
// but whose Go types differ go through runtime.Reshape.
func Flow(g *flowir.Graph) ([]Generated, diag.List) {
	fg := &flowGen{g: g, shared: newSharedSet(), plans: map[*connectorspec.Spec]*plan{}, name: goName(g.Flow.ID), inlines: map[*flowir.GraphNode]*inlineFunc{}}
	f := jen.NewFile(packageOf(filepath.Dir(g.Flow.File)))
	f.HeaderComment(Header)
	f.HeaderComment("Source: " + filepath.Base(g.Flow.File) + " (" + g.Flow.ID + " " + g.Flow.Version + ").")
	f.ImportName(runtimePkg, "runtime")
	fg.emit(f)
	if fg.diags.HasErrors() {
		return nil, fg.diags
	}
	data, err := render(f)
	if err != nil {
		var l diag.List
		l.Add(diag.Pos{File: g.Flow.File, Line: 1, Col: 1}, diag.GEN001, "report this as a flowgen bug with the flow attached", "generating flow: %v", err)
		return nil, l
	}
	return []Generated{{Path: FlowFile(g.Flow.File), Data: data}}, nil
}

func (fg *flowGen) plan(s *connectorspec.Spec) *plan {
	if p, ok := fg.plans[s]; ok {
		return p
	}
	p := newPlan(s, fg.shared)
	fg.diags.Append(p.diags)
	fg.plans[s] = p
	return p
}

// connectorPort is the type of a connector node's input or output.
func (fg *flowGen) connectorPort(s *connectorspec.Spec, output bool) nodePort {
	p := fg.plan(s)
	pkg, err := modpath.ImportPath(filepath.Dir(s.File))
	if err != nil {
		fg.diags.Add(s.Pos, diag.GEN001, "keep connectors inside a Go module", "%v", err)
	}
	t := p.in
	if output {
		t = p.out
	}
	id := goTypeID{pkg, t.name}
	for _, a := range p.m.aliases {
		if a.name == t.name {
			id = goTypeID{a.targetPkg, a.target}
			if a.targetPkg == "" {
				id.pkg = pkg
			}
		}
	}
	return nodePort{code: jen.Qual(pkg, t.name), id: id}
}

func (fg *flowGen) connectorPkg(s *connectorspec.Spec) string {
	pkg, _ := modpath.ImportPath(filepath.Dir(s.File))
	return pkg
}

var rawType = nodePort{code: jen.Qual(jsonPkg, "RawMessage"), id: goTypeID{jsonPkg, "RawMessage"}}

// inType and outType resolve node port types; control nodes take theirs
// from what flows into them.
func (fg *flowGen) inType(n *flowir.GraphNode, depth int) nodePort {
	switch n.Kind() {
	case flowir.KindConnector:
		if isConfined(n) {
			return rawType
		}
		return fg.connectorPort(n.Spec, false)
	case flowir.KindInline:
		if f, ok := fg.inline(n); ok {
			return f.in
		}
	case flowir.KindSwitch, flowir.KindCheckpoint, flowir.KindSleep, flowir.KindForEach:
		if depth > len(fg.g.Nodes) {
			return rawType
		}
		for _, e := range fg.g.Edges {
			if e.To == n && !e.Back() {
				return fg.outType(e.From, depth+1)
			}
		}
	}
	return rawType
}

func (fg *flowGen) outType(n *flowir.GraphNode, depth int) nodePort {
	switch n.Kind() {
	case flowir.KindConnector:
		if isConfined(n) {
			return rawType
		}
		return fg.connectorPort(n.Spec, true)
	case flowir.KindInline:
		if f, ok := fg.inline(n); ok {
			return f.out
		}
	case flowir.KindSwitch, flowir.KindCheckpoint, flowir.KindSleep:
		return fg.inType(n, depth)
	case flowir.KindForEach:
		if n.Body != nil {
			o := fg.outType(n.Body, depth+1)
			return nodePort{code: jen.Index().Add(o.code), id: goTypeID{"[]" + o.id.pkg, o.id.name}}
		}
	}
	return rawType
}

func lowerFirst(s string) string {
	if s == "" {
		return s
	}
	return strings.ToLower(s[:1]) + s[1:]
}

func (fg *flowGen) emit(f *jen.File) {
	flow := fg.g.Flow
	connectors := fg.name + "Connectors"
	var fields []jen.Code
	defaults := jen.Dict{}
	undo := map[string]*connectorspec.Spec{}
	fg.modules = map[string]string{}
	for _, n := range fg.g.Nodes {
		if n.Kind() != flowir.KindConnector || n.Spec == nil {
			continue
		}
		if isConfined(n) {
			fg.modules[n.Alias] = fg.confinedModule(f, n.At("uses"), n.Alias, n.Spec, n.Confined)
		} else {
			pkg := fg.connectorPkg(n.Spec)
			fields = append(fields, jen.Comment(fmt.Sprintf("%s runs node %s (%s).", goName(n.Alias), n.Alias, n.Spec.ID)),
				jen.Id(goName(n.Alias)).Qual(pkg, "Implementation"))
			defaults[jen.Id(goName(n.Alias))] = jen.Op("&").Qual(pkg, "Connector").Values()
			f.ImportName(pkg, packageOf(filepath.Dir(n.Spec.File)))
		}
		if c := n.Spec.Compensation; c != nil {
			u := n.Undo
			if u == nil {
				fg.diags.Add(c.At("connector"), diag.DAG206, "list the directory of the compensator's spec under the flow's connectors:", "cannot resolve compensator %q", c.Connector)
				continue
			}
			undo[n.Alias] = u
			if p := fg.confinedUndo(u); p != nil {
				fg.modules[n.Alias+"Undo"] = fg.confinedModule(f, c.At("connector"), n.Alias+"Undo", u, p)
				continue
			}
			upkg := fg.connectorPkg(u)
			fields = append(fields, jen.Comment(fmt.Sprintf("%sUndo compensates node %s (%s).", goName(n.Alias), n.Alias, u.ID)),
				jen.Id(goName(n.Alias)+"Undo").Qual(upkg, "Implementation"))
			defaults[jen.Id(goName(n.Alias)+"Undo")] = jen.Op("&").Qual(upkg, "Connector").Values()
			f.ImportName(upkg, packageOf(filepath.Dir(u.File)))
		}
	}
	f.Add(docComment("", fmt.Sprintf("%s are the implementations the nodes of flow %s run, by node.", connectors, flow.ID)))
	f.Type().Id(connectors).Struct(fields...)
	f.Line()
	f.Comment(fmt.Sprintf("Default%s uses each connector package's zero Connector.", connectors))
	f.Func().Id("Default" + connectors).Params().Id(connectors).Block(
		jen.Return(jen.Id(connectors).Values(defaults)),
	)
	f.Line()

	var body []jen.Code
	body = append(body, jen.Id("b").Op(":=").Qual(runtimePkg, "NewBuilder").Call(jen.Lit(flow.ID)))
	if flow.Version != "" {
		body = append(body, jen.Id("b").Dot("SetVersion").Call(jen.Lit(flow.Version)))
	}
	if b := flow.Policies.Budget; b != nil {
		body = append(body, jen.Id("b").Dot("SetBudget").Call(budgetCode(b)))
	}
	if p := flow.Policies.OnCompensationFailure; p != "" {
		policy := map[flowir.CompensationFailure]string{"continue": "CompensateContinue", "halt": "CompensateHalt", "retry": "CompensateRetry", "park": "CompensatePark"}[p]
		body = append(body, jen.Id("b").Dot("SetCompensationFailure").Call(jen.Qual(runtimePkg, policy)))
	}
	if r := flow.Policies.Retention; r > 0 {
		body = append(body, jen.Id("b").Dot("SetRetention").Call(durationCode(time.Duration(r))))
	}
	for _, s := range flow.Schedules {
		body = append(body, jen.Id("b").Dot("AddSchedule").Call(fg.scheduleCode(s)))
	}
	vars := map[*flowir.GraphNode]string{}
	// Bodies of forEach nodes are added before their forEach.
	order := make([]*flowir.GraphNode, 0, len(fg.g.Nodes))
	for _, n := range fg.g.Nodes {
		if n.BodyOf != nil {
			order = append(order, n)
		}
	}
	for _, n := range fg.g.Nodes {
		if n.BodyOf == nil {
			order = append(order, n)
		}
	}
	used := map[*flowir.GraphNode]bool{}
	for _, e := range fg.g.Edges {
		used[e.From], used[e.To] = true, true
	}
	for _, n := range fg.g.Nodes {
		if n.Body != nil {
			used[n.Body] = true
		}
		if _, ok := undo[n.Alias]; ok {
			used[n] = true
		}
	}
	for _, n := range order {
		v := lowerFirst(goName(n.Alias)) + "Node"
		vars[n] = v
		stmts := fg.addNode(n, v, vars, undo)
		if !used[n] && len(stmts) == 1 {
			stmts[0] = stripAssign(stmts[0])
		}
		body = append(body, stmts...)
	}
	for _, e := range fg.g.Edges {
		body = append(body, fg.connect(e, vars))
	}
	body = append(body, jen.Return(jen.Id("b").Dot("Build").Call()))
	f.Add(docComment("", fmt.Sprintf("New%s builds flow %s (%s) from c. Connections are typed: an edge between different Go types does not compile.", fg.name, flow.ID, filepath.Base(flow.File))))
	f.Func().Id("New"+fg.name).Params(jen.Id("c").Id(connectors)).Params(jen.Op("*").Qual(runtimePkg, "Flow"), jen.Error()).Block(body...)
}

// nodeOptions is the runtime.NodeOptions of a node that runs code: its
// attempt and heartbeat timeouts and rate limit (params are the
// connector's own).
func nodeOptions(n *flowir.GraphNode) jen.Dict {
	opts := jen.Dict{}
	if n.Timeout > 0 {
		opts[jen.Id("Timeout")] = durationCode(time.Duration(n.Timeout))
	}
	if n.HeartbeatTimeout > 0 {
		opts[jen.Id("HeartbeatTimeout")] = durationCode(time.Duration(n.HeartbeatTimeout))
	}
	if l := n.RateLimit; l != nil {
		opts[jen.Id("RateLimit")] = jen.Qual(runtimePkg, "RateLimit").Values(jen.Dict{jen.Id("QPS"): jen.Lit(l.QPS), jen.Id("Burst"): jen.Lit(l.Burst)})
	}
	return opts
}

func (fg *flowGen) addNode(n *flowir.GraphNode, v string, vars map[*flowir.GraphNode]string, undo map[string]*connectorspec.Spec) []jen.Code {
	switch n.Kind() {
	case flowir.KindConnector:
		opts := nodeOptions(n)
		if n.Params.Value != nil {
			params, err := strictyaml.CanonicalJSON(n.Params.JSON())
			if err == nil {
				opts[jen.Id("Params")] = jen.Qual(jsonPkg, "RawMessage").Call(jen.Lit(compactJSON(params)))
			}
		}
		node := fg.typedNode(n.Spec, n.Alias)
		out := []jen.Code{jen.Id(v).Op(":=").Qual(runtimePkg, "AddNode").Call(jen.Id("b"), jen.Lit(n.Alias),
			node, jen.Qual(runtimePkg, "NodeOptions").Values(opts))}
		if u, ok := undo[n.Alias]; ok {
			undoNode := fg.typedNode(u, n.Alias+"Undo")
			if isConfined(n) || fg.modules[n.Alias+"Undo"] != "" {
				// One side has JSON ports: the undo takes the node's output as
				// its own input type says (their schemas were proved to fit).
				undoNode = jen.Qual(runtimePkg, "TypedNode").Types(fg.outType(n, 0).code, rawType.code).Values(jen.Dict{
					jen.Id("Runner"): jen.Add(undoNode).Dot("Runner")})
			}
			out = append(out, jen.Qual(runtimePkg, "Compensate").Call(jen.Id("b"), jen.Id(v), undoNode, stringSlice(n.Spec.Compensation.UndoKey)))
		}
		return out
	case flowir.KindInline:
		f, ok := fg.inline(n)
		if !ok {
			return nil
		}
		helper := "Inline"
		if f.context {
			helper = "InlineContext"
		}
		opts := nodeOptions(n)
		return []jen.Code{jen.Id(v).Op(":=").Qual(runtimePkg, "AddNode").Call(jen.Id("b"), jen.Lit(n.Alias),
			jen.Qual(runtimePkg, helper).Call(jen.Lit(f.name), jen.Id(f.name)), jen.Qual(runtimePkg, "NodeOptions").Values(opts))}
	case flowir.KindSwitch:
		sw := n.Switch
		var cases []jen.Code
		for _, c := range sw.Cases {
			eq, _ := strictyaml.CanonicalJSON(c.Equals.JSON())
			cases = append(cases, jen.Values(jen.Dict{jen.Id("Label"): jen.Lit(c.Label), jen.Id("Equals"): jen.Qual(jsonPkg, "RawMessage").Call(jen.Lit(compactJSON(eq)))}))
		}
		d := jen.Dict{jen.Id("On"): jen.Lit(sw.On), jen.Id("Cases"): jen.Index().Qual(runtimePkg, "Case").Values(cases...)}
		if sw.Default != "" {
			d[jen.Id("Default")] = jen.Lit(sw.Default)
		}
		return []jen.Code{jen.Id(v).Op(":=").Qual(runtimePkg, "AddSwitch").Types(fg.inType(n, 0).code).Call(jen.Id("b"), jen.Lit(n.Alias), jen.Qual(runtimePkg, "Switch").Values(d))}
	case flowir.KindCheckpoint:
		return []jen.Code{jen.Id(v).Op(":=").Qual(runtimePkg, "AddCheckpoint").Types(fg.inType(n, 0).code).Call(jen.Id("b"), jen.Lit(n.Alias),
			jen.Qual(runtimePkg, "Checkpoint").Values(jen.Dict{jen.Id("Prompt"): jen.Lit(n.Checkpoint.Prompt)}))}
	case flowir.KindSleep:
		d := jen.Dict{}
		if n.Sleep.For > 0 {
			d[jen.Id("For")] = durationCode(time.Duration(n.Sleep.For))
		}
		if n.Sleep.Until != "" {
			d[jen.Id("Until")] = jen.Lit(n.Sleep.Until)
		}
		return []jen.Code{jen.Id(v).Op(":=").Qual(runtimePkg, "AddSleep").Types(fg.inType(n, 0).code).Call(jen.Id("b"), jen.Lit(n.Alias),
			jen.Qual(runtimePkg, "Sleep").Values(d))}
	case flowir.KindForEach:
		fe := n.ForEach
		d := jen.Dict{jen.Id("Items"): jen.Lit(fe.Items)}
		if fe.Concurrency > 0 {
			d[jen.Id("Concurrency")] = jen.Lit(fe.Concurrency)
		}
		switch fe.Aggregate {
		case flowir.AggregateAny:
			d[jen.Id("Aggregate")] = jen.Qual(runtimePkg, "AggregateAny")
		case flowir.AggregateQuorum:
			d[jen.Id("Aggregate")] = jen.Qual(runtimePkg, "AggregateQuorum")
			d[jen.Id("Quorum")] = jen.Lit(fe.Quorum)
		}
		if n.Body == nil {
			return nil
		}
		return []jen.Code{jen.Id(v).Op(":=").Qual(runtimePkg, "AddForEach").Types(fg.inType(n, 0).code, fg.inType(n.Body, 0).code, fg.outType(n.Body, 0).code).
			Call(jen.Id("b"), jen.Lit(n.Alias), jen.Id(vars[n.Body]), jen.Qual(runtimePkg, "ForEach").Values(d))}
	case flowir.KindSubflow:
		var inputs []string
		for _, in := range n.Subflow.Inputs {
			alias, _, _ := strings.Cut(in, ".")
			inputs = append(inputs, alias)
		}
		child := ""
		if n.Child != nil {
			child = n.Child.Flow.ID
		}
		sf := jen.Dict{jen.Id("Flow"): jen.Lit(child), jen.Id("Inputs"): stringSlice(inputs)}
		if n.Subflow.Budget != nil {
			sf[jen.Id("Budget")] = budgetCode(n.Subflow.Budget)
		}
		return []jen.Code{jen.Id(v).Op(":=").Qual(runtimePkg, "AddSubflow").Call(jen.Id("b"), jen.Lit(n.Alias), jen.Qual(runtimePkg, "Subflow").Values(sf))}
	}
	fg.diags.Add(n.Pos, diag.GEN001, "use a connector, switch, forEach, checkpoint or subflow node",
		"node %q: %s nodes are not generated yet", n.Alias, n.Kind())
	return nil
}

// typedNode is the TypedNode of connector s run under key (a node's
// alias, or alias+"Undo" for its compensator): its module when confined,
// its package's node of the flow's Connectors field otherwise.
func (fg *flowGen) typedNode(s *connectorspec.Spec, key string) *jen.Statement {
	if m := fg.modules[key]; m != "" {
		return jen.Qual(runtimePkg, "ConfinedNode").Call(jen.Id(m).Call())
	}
	return jen.Qual(fg.connectorPkg(s), "NewTypedNode").Call(jen.Id("c").Dot(goName(key)))
}

// stripAssign drops the variable of a node nothing refers to: the call
// after " := ".
func stripAssign(c jen.Code) jen.Code {
	st, ok := c.(*jen.Statement)
	if !ok || len(*st) < 3 {
		return c
	}
	rest := (*st)[2:]
	return &rest
}

func typeName(id goTypeID) string {
	if id.pkg == "" {
		return id.name
	}
	return id.pkg + "." + id.name
}

func stringSlice(ss []string) jen.Code {
	var lits []jen.Code
	for _, s := range ss {
		lits = append(lits, jen.Lit(s))
	}
	return jen.Index().String().Values(lits...)
}

func compactJSON(b []byte) string {
	var v any
	if json.Unmarshal(b, &v) != nil {
		return string(b)
	}
	out, _ := json.Marshal(v)
	return string(out)
}

// budgetCode is a runtime.Budget literal.
func budgetCode(b *flowir.Budget) jen.Code {
	d := jen.Dict{}
	if b.Activations > 0 {
		d[jen.Id("Activations")] = jen.Lit(b.Activations)
	}
	if b.Timeout > 0 {
		d[jen.Id("Timeout")] = durationCode(time.Duration(b.Timeout))
	}
	return jen.Qual(runtimePkg, "Budget").Values(d)
}

// connect writes one edge: Connect when both ends have the same Go type,
// Connect through Reshape when only their schemas agree.
func (fg *flowGen) connect(e *flowir.GraphEdge, vars map[*flowir.GraphNode]string) jen.Code {
	from, to := fg.outType(e.From, 0), fg.inType(e.To, 0)
	port := e.FromPort
	if port == "" {
		port = "out"
	}
	out := jen.Id(vars[e.From]).Dot("Out").Call(jen.Lit(port))
	failed := func(n *flowir.GraphNode) bool {
		f, seen := fg.inlines[n]
		return n.Kind() == flowir.KindInline && seen && f == nil
	}
	if failed(e.From) || failed(e.To) {
		// The function's own diagnostic says what is wrong.
	} else if from.id != to.id && (e.From.Kind() == flowir.KindInline || e.To.Kind() == flowir.KindInline) {
		// No schema proves the two compatible: only the same Go type will do.
		fg.diags.Add(e.At("from"), diag.GEN001, "make the inline function take or return exactly the type at the other end",
			"edge %s.%s -> %s joins Go types %s and %s", e.From.Alias, port, e.To.Alias, typeName(from.id), typeName(to.id))
	} else if from.id != to.id {
		out = jen.Qual(runtimePkg, "Reshape").Types(from.code, to.code).Call(out)
	}
	opts := jen.Dict{}
	if e.Delivery != flowtype.AtLeastOnce {
		opts[jen.Id("Delivery")] = jen.Qual(runtimePkg, e.Delivery.String())
		if e.Delivery == flowtype.ExactlyOnce && e.To.Spec != nil && e.To.Spec.Idempotency != nil && e.To.Spec.Idempotency.TTL > 0 {
			opts[jen.Id("DedupeTTL")] = durationCode(time.Duration(e.To.Spec.Idempotency.TTL))
		}
	}
	if e.Back() {
		opts[jen.Id("MaxIterations")] = jen.Lit(e.Cycle.MaxIterations)
	}
	if e.PartitionKey != "" {
		opts[jen.Id("PartitionKey")] = jen.Lit(e.PartitionKey)
	}
	return jen.Qual(runtimePkg, "Connect").Call(jen.Id("b"), out, jen.Id(vars[e.To]).Dot("In").Call(), jen.Qual(runtimePkg, "EdgeOptions").Values(opts))
}

// scheduleCode is the runtime.Schedule literal of a flow's schedule.
func (fg *flowGen) scheduleCode(s *flowir.Schedule) jen.Code {
	d := jen.Dict{jen.Id("Name"): jen.Lit(s.Name), jen.Id("Cron"): jen.Lit(s.Cron)}
	if input, err := s.InputJSON(); err == nil { // flowir reported any error
		d[jen.Id("Input")] = jen.Qual(jsonPkg, "RawMessage").Call(jen.Lit(compactJSON(input)))
	}
	if s.Overlap != "" {
		d[jen.Id("Overlap")] = jen.Qual(runtimePkg, map[flowir.Overlap]string{"skip": "OverlapSkip", "buffer": "OverlapBuffer", "allow": "OverlapAllow"}[s.Overlap])
	}
	if s.CatchUp > 0 {
		d[jen.Id("CatchUp")] = durationCode(time.Duration(s.CatchUp))
	}
	return jen.Qual(runtimePkg, "Schedule").Values(d)
}
