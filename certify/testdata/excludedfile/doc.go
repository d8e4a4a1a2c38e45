// Package excludedfile is a connector of the certification corpus.
package excludedfile
