package testutil

import (
	"github.com/pmezard/go-difflib/difflib"
)

// Diff is a unified diff from want (named wantName) to got (named
// gotName), with three lines of context; "" when they are equal. Golden
// tests print it so a mismatch says what changed, not only that something
// did.
func Diff(wantName string, want []byte, gotName string, got []byte) string {
	if string(want) == string(got) {
		return ""
	}
	d, err := difflib.GetUnifiedDiffString(difflib.UnifiedDiff{
		A: difflib.SplitLines(string(want)), FromFile: wantName,
		B: difflib.SplitLines(string(got)), ToFile: gotName,
		Context: 3,
	})
	if err != nil {
		return "(no diff: " + err.Error() + ")"
	}
	return d
}
