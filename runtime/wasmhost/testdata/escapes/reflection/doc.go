// Package reflection is an adversarial connector for the confinement tests:
// reads a file through a template that calls a method by reflection.
package reflection
