// Package doublecharge is a connector of the certification corpus.
package doublecharge
