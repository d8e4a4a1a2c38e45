package atomicfile

import (
	"os"
	"path/filepath"
	"testing"
)

func TestWriteReplacesAndLeavesNothingBehind(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "f.json")
	for _, content := range []string{"old", "new"} {
		if err := Write(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	got, _ := os.ReadFile(p)
	info, _ := os.Stat(p)
	if string(got) != "new" || info.Mode().Perm() != 0o600 {
		t.Fatalf("content %q mode %v", got, info.Mode())
	}
	if err := Write(filepath.Join(dir, "missing", "f"), []byte("x"), 0o644); err == nil {
		t.Fatal("a write into a missing directory succeeded")
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Fatalf("left behind: %v", entries)
	}
}
