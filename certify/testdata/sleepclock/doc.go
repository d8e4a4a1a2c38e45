// Package sleepclock is a connector that recognises a test world by its
// clock: one that a sleep does not move is one that skips sleeps.
package sleepclock
