// Command flowgen-vet runs flowgen's connector analysis as a go vet tool:
//
//	go build -o flowgen-vet github.com/flowgen-dev/flowgen/cmd/flowgen-vet
//	go vet -vettool=$(pwd)/flowgen-vet ./...
//
// It reports nondeterminism (clocks, randomness, environment, goroutines,
// map order) and capability bypasses in connector code; see package
// connectorvet for the rules and how to accept a finding.
package main

import (
	"golang.org/x/tools/go/analysis/unitchecker"

	"github.com/flowgen-dev/flowgen/connectorvet"
)

func main() { unitchecker.Main(connectorvet.Analyzer) }
