// Package pgcpu reads how much CPU time the PostgreSQL server on this
// machine has spent, from /proc, so a benchmark can report the server's CPU
// per step next to its throughput: the figure that tells whether more
// worker processes and machines would turn into throughput, or whether the
// server's CPU is the limit. It counts every process named postgres that
// the benchmark's user can read (the postmaster, its backends and its
// background workers), so a benchmark must be the server's only client
// while it measures.
package pgcpu

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"time"
)

// ticksPerSecond is USER_HZ, the unit of /proc/<pid>/stat's CPU times: 100
// on every Linux architecture Go supports.
const ticksPerSecond = 100

// ErrUnavailable: this machine has no /proc, or no PostgreSQL process is
// visible in it (a server on another machine).
var ErrUnavailable = errors.New("pgcpu: no local PostgreSQL processes in /proc")

// Used returns the user and system CPU time spent so far by the PostgreSQL
// processes alive now and by the ones they have reaped (the postmaster
// collects its exited backends' time), so backends that come and go
// between two readings are counted.
func Used() (time.Duration, error) {
	stats, err := filepath.Glob("/proc/[0-9]*/stat")
	if err != nil || len(stats) == 0 {
		return 0, ErrUnavailable
	}
	var ticks int64
	found := false
	for _, path := range stats {
		raw, err := os.ReadFile(path)
		if err != nil {
			continue // the process ended while we looked
		}
		t, ok := postgresTicks(raw)
		if ok {
			ticks += t
			found = true
		}
	}
	if !found {
		return 0, ErrUnavailable
	}
	return time.Duration(ticks) * time.Second / ticksPerSecond, nil
}

// postgresTicks parses one /proc/<pid>/stat line and returns utime, stime,
// cutime and cstime summed when the process is named postgres. The name sits in parentheses and may
// itself hold spaces or parentheses, so fields are counted from the last
// closing one.
func postgresTicks(stat []byte) (int64, bool) {
	open, end := bytes.IndexByte(stat, '('), bytes.LastIndexByte(stat, ')')
	if open < 0 || end < open || string(stat[open+1:end]) != "postgres" {
		return 0, false
	}
	// After ") " come state (field 3) ... utime, stime, cutime and cstime
	// (fields 14 to 17).
	fields := bytes.Fields(stat[end+1:])
	if len(fields) < 15 {
		return 0, false
	}
	var sum int64
	for _, f := range fields[11:15] {
		n, err := strconv.ParseInt(string(f), 10, 64)
		if err != nil {
			return 0, false
		}
		sum += n
	}
	return sum, true
}
