// Package depclock is a connector of the certification corpus.
package depclock
