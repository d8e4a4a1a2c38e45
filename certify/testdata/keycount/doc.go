// Package keycount is a connector of the certification corpus.
package keycount
