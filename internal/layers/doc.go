// Package layers holds no code: its test keeps the import graph of the
// module pointing one way (see layers_test.go for the rules and why).
package layers
