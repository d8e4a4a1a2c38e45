package gen

import (
	"github.com/dave/jennifer/jen"

	"github.com/flowgen-dev/flowgen/flowir"
)

const localrunPkg = "github.com/flowgen-dev/flowgen/serve/localrun"

// ProgramPackage is one package of generated flows a program runs: its
// import path and the flows (subflows included) whose constructors it
// hands over.
type ProgramPackage struct {
	ImportPath string
	Flows      []*flowir.Graph
}

// FlowProgram renders the main package that flowgen run, worker and serve
// build: it hands the constructor of every flow, with its default
// connectors, to localrun.<entry> (Main, WorkerMain or ServeMain). Flows
// appear in the order given; packages with the same name are imported
// under distinct names.
func FlowProgram(entry string, pkgs []ProgramPackage) ([]byte, error) {
	f := jen.NewFile("main")
	f.HeaderComment(Header)
	var ctors []jen.Code
	for _, p := range pkgs {
		for _, g := range p.Flows {
			name := goName(g.Flow.ID)
			ctors = append(ctors, jen.Line().Func().Params().Params(jen.Op("*").Qual(runtimePkg, "Flow"), jen.Error()).Block(
				jen.Return(jen.Qual(p.ImportPath, "New"+name).Call(jen.Qual(p.ImportPath, "Default"+name+"Connectors").Call())),
			))
		}
	}
	ctors = append(ctors, jen.Line())
	f.Func().Id("main").Params().Block(jen.Qual(localrunPkg, entry).Call(ctors...))
	return render(f)
}
