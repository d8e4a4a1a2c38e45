//go:build !wasip1

package probe

func rawABI() string { return "native" }
