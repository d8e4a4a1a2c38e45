// Package goodsortedkeys is a connector of the certification corpus.
package goodsortedkeys
