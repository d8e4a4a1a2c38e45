// Package execproc is a connector of the certification corpus.
package execproc
