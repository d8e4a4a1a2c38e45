// Package reader runs the query its input names, for the confinement
// tests: a connector that may only read must not write through a query,
// however the statement is phrased.
package reader
