// Package flows is a golden case of the flow generator: a connector node,
// a checkpoint and a subflow.
package flows
