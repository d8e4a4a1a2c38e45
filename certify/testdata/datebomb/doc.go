// Package datebomb is a connector of the certification corpus.
package datebomb
