//go:build !wasip1

package initpoll

func hang() {}
