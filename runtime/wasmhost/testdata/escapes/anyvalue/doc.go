// Package anyvalue is an adversarial connector for the confinement tests:
// reaches the network through values held as any.
package anyvalue
