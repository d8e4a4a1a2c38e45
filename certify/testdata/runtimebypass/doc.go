// Package runtimebypass is a connector of the certification corpus.
package runtimebypass
