// Package goodkv is a connector of the certification corpus.
package goodkv
