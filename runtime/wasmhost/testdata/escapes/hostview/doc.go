// Package hostview is an adversarial connector for the confinement tests:
// returns what it sees of the host: zone, clock, processors, map order.
package hostview
