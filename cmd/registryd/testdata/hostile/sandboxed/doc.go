// Package sandboxed is a hostile connector for the registry end-to-end test.
package sandboxed
