// Package writer posts to its provider, for the confinement tests: a
// module whose spec is swapped for a read-only one must be refused.
package writer
