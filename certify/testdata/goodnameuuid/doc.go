// Package goodnameuuid is a connector of the certification corpus.
package goodnameuuid
