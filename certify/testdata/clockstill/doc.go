// Package clockstill is a connector that recognises a test world by its
// clock: one that reads the same twice is not production's.
package clockstill
