package flowtype

import "strings"

// Closest returns the option nearest to s, ignoring case, when it is a
// likely misspelling (at most two edits away, and fewer edits than half
// its length); ok is false when no option is that close.
func Closest(s string, options []string) (best string, ok bool) {
	bestDist := 3
	for _, o := range options {
		d := editDistance(strings.ToLower(s), strings.ToLower(o))
		if d < bestDist && d*2 < max(len(o), 2) {
			best, bestDist, ok = o, d, true
		}
	}
	return best, ok
}

// editDistance is the Levenshtein distance between a and b.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
