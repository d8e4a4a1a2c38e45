package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func runCLI(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), args, &stdout, &stderr)
	return stdout.String(), stderr.String(), code
}

// TestTokenCommands: create prints the secret once, list shows the token
// without it, revoke marks it; mistakes are named.
func TestTokenCommands(t *testing.T) {
	t.Parallel()
	data := []string{"--data-dir", t.TempDir()}
	secret, errOut, code := runCLI(t, append([]string{"token", "create", "--name", "ci", "--scope", "publish:payments,pull", "--expires", "24h"}, data...)...)
	if code != 0 || !strings.HasPrefix(secret, "fgr_") || !strings.Contains(errOut, "shown once") {
		t.Fatalf("create: %d %q %s", code, secret, errOut)
	}
	list, _, code := runCLI(t, append([]string{"token", "list"}, data...)...)
	if code != 0 || !strings.Contains(list, "publish:payments,pull") || !strings.Contains(list, "expires") || strings.Contains(list, strings.TrimSpace(secret)) {
		t.Fatalf("list: %d\n%s", code, list)
	}
	id := strings.Fields(strings.Split(list, "\n")[1])[0]
	if out, errOut, code := runCLI(t, append([]string{"token", "revoke", id}, data...)...); code != 0 || !strings.Contains(out, "revoked "+id) {
		t.Fatalf("revoke: %d %s %s", code, out, errOut)
	}
	if list, _, _ := runCLI(t, append([]string{"token", "list"}, data...)...); !strings.Contains(list, "revoked") {
		t.Errorf("after revoke:\n%s", list)
	}

	badPolicy := filepath.Join(t.TempDir(), "policy.yaml")
	os.WriteFile(badPolicy, []byte("apiVersion: flowgen.dev/v1\nkind: PullPolicy\nmaxEffects: Loud\n"), 0o644)
	for _, c := range []struct {
		args []string
		says string
	}{
		{[]string{"token", "create", "--name", "x", "--scope", "publish:Bad/NS"}, "namespace"},
		{[]string{"token", "create", "--name", "x", "--scope", "root"}, "unknown scope"},
		{[]string{"token", "create", "--scope", "pull"}, "needs a name"},
		{[]string{"token", "create", "--name", "x", "--scope", "pull", "--policy", badPolicy}, "policy.yaml:3:"},
		{[]string{"token", "create", "--name", "x", "--scope", "admin", "--policy", badPolicy}, "policy.yaml:3:"},
		{[]string{"token", "revoke", "tok_nope"}, "not found"},
		{[]string{"token", "rotate"}, "unknown token command"},
	} {
		_, errOut, code := runCLI(t, append(c.args, data...)...)
		if code == 0 || !strings.Contains(errOut, c.says) {
			t.Errorf("%v: exit %d, stderr %q does not say %q", c.args, code, errOut, c.says)
		}
	}
	if _, errOut, code := runCLI(t, "serve", "-h"); code != 0 || !strings.Contains(errOut, "--tls-cert") && !strings.Contains(errOut, "-tls-cert") {
		t.Errorf("serve -h: %d %s", code, errOut)
	}
	if out, _, code := runCLI(t, "help"); code != 0 || !strings.Contains(out, "REGISTRYD_DATABASE_URL") {
		t.Errorf("help: %d %s", code, out)
	}
}

// TestHelpAndVersion: every --help answers on stdout with exit 0, and
// version says what runs.
func TestHelpAndVersion(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{{"help"}, {"--help"}, {"token", "--help"}, {"token", "help"}} {
		if out, errOut, code := runCLI(t, args...); code != 0 || !strings.Contains(out, "registryd token") {
			t.Errorf("%v: %d %s %s", args, code, out, errOut)
		}
	}
	if out, _, code := runCLI(t, "version"); code != 0 || !strings.HasPrefix(out, "registryd ") || !strings.Contains(out, "go1.") {
		t.Errorf("version: %d %s", code, out)
	}
}
