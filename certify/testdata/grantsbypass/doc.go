// Package grantsbypass is a connector of the certification corpus.
package grantsbypass
