// Package sharedkey is a connector of the certification corpus.
package sharedkey
