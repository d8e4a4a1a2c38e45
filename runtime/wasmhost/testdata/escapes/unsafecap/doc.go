// Package unsafecap is an adversarial connector for the confinement tests:
// writes through its read capability after an unsafe conversion.
package unsafecap
