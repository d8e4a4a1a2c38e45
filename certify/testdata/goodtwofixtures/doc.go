// Package goodtwofixtures is a connector of the certification corpus.
package goodtwofixtures
