// Package computednotify is a connector of the certification corpus.
package computednotify
