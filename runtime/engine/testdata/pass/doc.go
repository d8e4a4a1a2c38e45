// Package pass is a Pure connector that passes its input on: the same
// code runs natively and as its module in the engine's benchmarks of
// confinement's cost.
package pass
