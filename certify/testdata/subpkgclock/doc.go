// Package subpkgclock is a connector of the certification corpus.
package subpkgclock
