// Package enumeffect is a connector of the certification corpus.
package enumeffect
