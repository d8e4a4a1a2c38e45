// Package comboeffect is a connector of the certification corpus.
package comboeffect
