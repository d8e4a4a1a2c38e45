// Package linkname is a connector of the certification corpus.
package linkname
