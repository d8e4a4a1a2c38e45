// Package outlive is an adversarial connector for the confinement tests:
// reaches out from a goroutine and a timer after Run returned.
package outlive
