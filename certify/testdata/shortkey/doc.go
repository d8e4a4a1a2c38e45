// Package shortkey is a connector of the certification corpus.
package shortkey
