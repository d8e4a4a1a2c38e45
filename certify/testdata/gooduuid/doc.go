// Package gooduuid is a connector of the certification corpus.
package gooduuid
