package readonly

import "os"

// Effects is ReadOnly.
const Effects = 1

func save() {
	_ = os.WriteFile("cache", nil, 0o644) // want `write: os.WriteFile writes to the file system, but the connector is declared ReadOnly`
	f, _ := os.Create("x")                // want `write: os.Create writes`
	_, _ = f.Write(nil)                   // want `write: os.File.Write writes`
	_, _ = os.ReadFile("x")
}
