package gen

import (
	"fmt"
	"path/filepath"

	"github.com/dave/jennifer/jen"

	"github.com/flowgen-dev/flowgen/connectorspec"
	"github.com/flowgen-dev/flowgen/diag"
	"github.com/flowgen-dev/flowgen/flowir"
	"github.com/flowgen-dev/flowgen/internal/modpath"
	"github.com/flowgen-dev/flowgen/runtime"
)

// A pulled connector runs confined (docs/codegen.md, "Pulled
// connectors"): the flow's code never imports its package, whose author's
// code would then run in the engine's process at start. The node is a
// runtime.ConfinedNode with JSON ports, joined to its neighbours through
// runtime.Reshape (flowir proved their schemas compatible), and its
// declaration, module digest and module path are written into the flow's
// file as data.

// confinedModule writes the function that returns the runtime.Confined of
// the pulled connector s, for node alias, and returns its name.
func (fg *flowGen) confinedModule(f *jen.File, at diag.Pos, alias string, s *connectorspec.Spec, p *connectorspec.Pulled) string {
	name := lowerFirst(fg.name) + goName(alias) + "Module"
	decl, err := Declare(s)
	if err != nil {
		fg.diags.Add(s.Pos, diag.GEN001, "fix the pulled connector's spec, or pull it again", "%v", err)
		return name
	}
	root, err := modpath.Root(filepath.Dir(fg.g.Flow.File))
	if err != nil {
		fg.diags.Add(at, diag.GEN001, "keep the flow and the connectors it pulled inside one Go module (run go mod init at its root)", "%v", err)
		return name
	}
	rel, err := filepath.Rel(root, p.ModulePath())
	if err != nil || !filepath.IsLocal(rel) {
		fg.diags.Add(at, diag.GEN001, "pull the connector into a directory of the flow's Go module", "node %s: module %s is outside the flow's Go module %s", alias, p.ModulePath(), root)
		return name
	}
	f.Add(docComment("", fmt.Sprintf("%s is the certified module of %s %s that node %s runs, confined: its declaration from the certified spec, and the digest that Register checks the module file against. The path is relative to the root of the flow's Go module (engine.Options.ModuleDir).", name, s.ID, s.Version, alias)))
	f.Func().Id(name).Params().Qual(runtimePkg, "Confined").Block(jen.Return(jen.Qual(runtimePkg, "Confined").Values(jen.Dict{
		jen.Id("Declaration"): declarationCode(decl),
		jen.Id("Digest"):      jen.Lit(p.ModuleDigest),
		jen.Id("Path"):        jen.Lit(filepath.ToSlash(rel)),
	})))
	f.Line()
	return name
}

// confinedUndo is the pull record of a compensator that runs confined: a
// pulled one always does (a node cannot say otherwise for it).
func (fg *flowGen) confinedUndo(u *connectorspec.Spec) *connectorspec.Pulled {
	p, err := connectorspec.PulledOf(u)
	if err != nil {
		fg.diags.Add(u.Pos, diag.CONF001, "pull the connector again (flowgen pull), which rewrites its record", "compensator %s: %v", u.ID, err)
		return nil
	}
	return p
}

// declarationCode is a runtime.Declaration literal, zero fields left out.
func declarationCode(d runtime.Declaration) jen.Code {
	v := jen.Dict{
		jen.Id("ID"):          jen.Lit(d.ID),
		jen.Id("Version"):     jen.Lit(d.Version),
		jen.Id("Effects"):     jen.Qual(runtimePkg, d.Effects.String()),
		jen.Id("Determinism"): jen.Qual(runtimePkg, d.Determinism.String()),
		jen.Id("RetryOwner"):  jen.Qual(runtimePkg, retryOwnerName(d.RetryOwner)),
		jen.Id("KeySchema"):   jen.Lit(d.KeySchema),
		jen.Id("KeyScope"):    jen.Qual(runtimePkg, "Scope"+d.KeyScope.String()),
		jen.Id("InPort"):      jen.Lit(d.InPort),
		jen.Id("OutPort"):     jen.Lit(d.OutPort),
	}
	if len(d.KeyFields) > 0 {
		v[jen.Id("KeyFields")] = stringSlice(d.KeyFields)
	}
	if len(d.Capabilities) > 0 {
		v[jen.Id("Capabilities")] = stringSlice(d.Capabilities)
	}
	if len(d.Egress) > 0 {
		v[jen.Id("Egress")] = stringSlice(d.Egress)
	}
	if len(d.Secrets) > 0 {
		v[jen.Id("Secrets")] = stringSlice(d.Secrets)
		v[jen.Id("SecretHosts")] = secretHostsCode(d.SecretHosts)
	}
	if r := d.Retry; r.MaxAttempts > 0 || r.InitialInterval > 0 {
		rp := jen.Dict{jen.Id("MaxAttempts"): jen.Lit(r.MaxAttempts)}
		if r.InitialInterval > 0 {
			rp[jen.Id("InitialInterval")] = durationCode(r.InitialInterval)
		}
		if r.BackoffCoefficient != 0 {
			rp[jen.Id("BackoffCoefficient")] = jen.Lit(r.BackoffCoefficient)
		}
		if r.MaxInterval > 0 {
			rp[jen.Id("MaxInterval")] = durationCode(r.MaxInterval)
		}
		if len(r.NonRetryable) > 0 {
			var kinds []jen.Code
			for _, k := range r.NonRetryable {
				kinds = append(kinds, jen.Qual(runtimePkg, k.String()))
			}
			rp[jen.Id("NonRetryable")] = jen.Index().Qual(runtimePkg, "ErrorKind").Values(kinds...)
		}
		v[jen.Id("Retry")] = jen.Qual(runtimePkg, "RetryPolicy").Values(rp)
	}
	if d.RateLimit.QPS > 0 {
		v[jen.Id("RateLimit")] = jen.Qual(runtimePkg, "RateLimit").Values(jen.Dict{jen.Id("QPS"): jen.Lit(d.RateLimit.QPS), jen.Id("Burst"): jen.Lit(d.RateLimit.Burst)})
	}
	if len(d.Cache.Key) > 0 {
		c := jen.Dict{jen.Id("Key"): stringSlice(d.Cache.Key)}
		if d.Cache.TTL > 0 {
			c[jen.Id("TTL")] = durationCode(d.Cache.TTL)
		}
		v[jen.Id("Cache")] = jen.Qual(runtimePkg, "Cache").Values(c)
	}
	if len(d.Classes) > 0 {
		classes := jen.Dict{}
		for _, path := range sortedKeysOf(d.Classes) {
			classes[jen.Lit(path)] = jen.Lit(d.Classes[path])
		}
		v[jen.Id("Classes")] = jen.Map(jen.String()).String().Values(classes)
	}
	return jen.Qual(runtimePkg, "Declaration").Values(v)
}

// isConfined reports whether a connector node runs confined.
func isConfined(n *flowir.GraphNode) bool {
	return n.Kind() == flowir.KindConnector && n.Confined != nil
}
