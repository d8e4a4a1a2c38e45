// Package doubleretry is a connector of the certification corpus.
package doubleretry
