// Package secretleak is a connector of the certification corpus.
package secretleak
