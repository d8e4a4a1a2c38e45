// Package initread is an adversarial connector for the confinement tests:
// reads the host at package initialization.
package initread
