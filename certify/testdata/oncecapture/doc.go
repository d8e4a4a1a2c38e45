// Package oncecapture is a connector of the certification corpus.
package oncecapture
