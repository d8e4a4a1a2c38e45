// Package linkname is an adversarial connector for the confinement tests:
// opens a file and reads the clock through linkname.
package linkname
