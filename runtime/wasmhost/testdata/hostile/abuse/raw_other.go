//go:build !wasip1

package abuse

func rawIOV(n, m int) string { return "native" }
func rawPollWrite() string   { return "native" }
func rawFS() string          { return "native" }
func rawABI() string         { return "native" }
