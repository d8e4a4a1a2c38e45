// Package inlinebad is a negative case of the flow generator: inline
// nodes whose functions are missing, mis-shaped or of the wrong type.
package inlinebad

// WrongSignature returns no error, so a node cannot call it.
func WrongSignature(s string) string { return s }

// TakesAnInt has the right shape but cannot take a slug.
func TakesAnInt(n int) (int, error) { return n, nil }
