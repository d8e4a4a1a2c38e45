// Package notifyeffect is a connector of the certification corpus.
package notifyeffect
