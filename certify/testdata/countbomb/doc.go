// Package countbomb is a connector of the certification corpus.
package countbomb
