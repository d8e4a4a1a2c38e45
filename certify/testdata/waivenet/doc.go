// Package waivenet is a connector of the certification corpus.
package waivenet
