// Package funcvalue is an adversarial connector for the confinement tests:
// reads a file and the clock through function values in a map.
package funcvalue
