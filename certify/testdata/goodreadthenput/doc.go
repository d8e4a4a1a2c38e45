// Package goodreadthenput is a connector of the certification corpus.
package goodreadthenput
