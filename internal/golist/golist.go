// Package golist runs go list -json and decodes what it prints, for the
// packages that ask the go command about a module.
package golist

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
)

// Packages runs "go list -json" with args in dir, with extraEnv added to
// this process's environment, and decodes every object it prints into a
// T (declare only the fields you read). A failing go command's error
// carries its standard error.
func Packages[T any](ctx context.Context, dir string, extraEnv []string, args ...string) ([]T, error) {
	cmd := exec.CommandContext(ctx, "go", append([]string{"list", "-json"}, args...)...)
	cmd.Dir = dir
	if extraEnv != nil {
		cmd.Env = append(os.Environ(), extraEnv...)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go list: %v\n%s", err, bytes.TrimSpace(stderr.Bytes()))
	}
	var all []T
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p T
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			return all, nil
		} else if err != nil {
			return nil, fmt.Errorf("go list output: %w", err)
		}
		all = append(all, p)
	}
}
