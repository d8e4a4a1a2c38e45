// Package chunkleak is a connector of the certification corpus.
package chunkleak
