// Package goodwaiver is a connector of the certification corpus.
package goodwaiver
