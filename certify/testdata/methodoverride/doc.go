// Package methodoverride is a connector of the certification corpus.
package methodoverride
