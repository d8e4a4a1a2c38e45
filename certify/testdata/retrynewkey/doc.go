// Package retrynewkey is a connector of the certification corpus.
package retrynewkey
