// Package assembly is an adversarial connector for the confinement tests:
// opens a file with a raw system call written in assembly.
package assembly
