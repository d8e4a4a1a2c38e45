// Package piileak is a connector of the certification corpus.
package piileak
