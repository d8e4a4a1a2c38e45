// Package noeffect is a connector of the certification corpus.
package noeffect
