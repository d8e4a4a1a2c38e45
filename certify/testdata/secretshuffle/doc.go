// Package secretshuffle is a connector of the certification corpus.
package secretshuffle
