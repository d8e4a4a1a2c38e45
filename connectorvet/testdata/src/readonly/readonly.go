package readonly

import "os"

func save() {
	_ = os.WriteFile("cache", nil, 0o644) // want `write: os.WriteFile changes the file system`
	f, _ := os.Create("x")                // want `write: os.Create changes the file system`
	_, _ = f.Write(nil)                   // a File came from a finding above
	_, _ = os.ReadFile("x")               // want `fs: os.ReadFile reads the file system`
	os.Stdout.WriteString("logging is fine")
}
