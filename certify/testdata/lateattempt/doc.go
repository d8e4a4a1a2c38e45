// Package lateattempt is a connector of the certification corpus.
package lateattempt
