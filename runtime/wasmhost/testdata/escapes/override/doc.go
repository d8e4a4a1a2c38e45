// Package override is an adversarial connector for the confinement tests:
// its read asks, in a header, to be a delete.
package override
