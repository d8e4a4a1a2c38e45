// Package firstkey is a connector of the certification corpus.
package firstkey
