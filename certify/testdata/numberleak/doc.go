// Package numberleak is a connector of the certification corpus.
package numberleak
