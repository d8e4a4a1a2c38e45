package signer

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/flowgen-dev/flowgen/internal/testutil"
	"github.com/flowgen-dev/flowgen/signing"
)

func TestSignVerify(t *testing.T) {
	t.Parallel()
	for _, password := range []string{"", "correct horse"} {
		priv, pub, err := GenerateKey([]byte(password))
		if err != nil {
			t.Fatal(err)
		}
		encrypted := bytes.Contains(priv, []byte("ENCRYPTED SIGSTORE PRIVATE KEY"))
		if encrypted != (password != "") {
			t.Errorf("password %q: encrypted=%v", password, encrypted)
		}
		s, err := Load(priv, []byte(password))
		if err != nil {
			t.Fatal(err)
		}
		data := []byte("artifact bytes")
		sig, err := s.Sign(data)
		if err != nil {
			t.Fatal(err)
		}
		if err := signing.Verify(pub, data, sig); err != nil {
			t.Errorf("own signature: %v", err)
		}
		if err := signing.Verify(pub, []byte("artifact bytez"), sig); !errors.Is(err, signing.ErrBadSignature) {
			t.Errorf("tampered data: %v", err)
		}
		_, otherPub, _ := GenerateKey(nil)
		if err := signing.Verify(otherPub, data, sig); !errors.Is(err, signing.ErrBadSignature) {
			t.Errorf("other key: %v", err)
		}
		if err := signing.Verify(pub, data, []byte("%%%")); !errors.Is(err, signing.ErrBadSignature) {
			t.Errorf("garbage signature: %v", err)
		}
		if got, _ := s.PublicKey(); !bytes.Equal(got, pub) {
			t.Error("PublicKey differs from the generated one")
		}
	}
	priv, _, _ := GenerateKey([]byte("right"))
	if _, err := Load(priv, []byte("wrong")); err == nil {
		t.Error("an encrypted key opened with the wrong password")
	}
}

// TestStockCosignVerifies: what Sign produces, stock cosign verifies
// offline with the public key, and rejects for other bytes; and a key
// cosign generated signs blobs we verify.
func TestStockCosignVerifies(t *testing.T) {
	t.Parallel()
	cosign := testutil.CosignPath(t)
	dir := t.TempDir()
	priv, pub, err := GenerateKey([]byte("pw"))
	if err != nil {
		t.Fatal(err)
	}
	s, err := Load(priv, []byte("pw"))
	if err != nil {
		t.Fatal(err)
	}
	blob, sigFile, pubFile := filepath.Join(dir, "artifact.zip"), filepath.Join(dir, "artifact.zip.sig"), filepath.Join(dir, "flowgen.pub")
	data := bytes.Repeat([]byte("zip"), 10000)
	sig, _ := s.Sign(data)
	os.WriteFile(blob, data, 0o644)
	os.WriteFile(sigFile, sig, 0o644)
	os.WriteFile(pubFile, pub, 0o644)
	verify := func() (string, error) {
		cmd := exec.Command(cosign, "verify-blob", "--key", pubFile, "--signature", sigFile, "--insecure-ignore-tlog", blob)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	if out, err := verify(); err != nil || !strings.Contains(out, "Verified OK") {
		t.Fatalf("cosign rejected our signature: %v\n%s", err, out)
	}
	os.WriteFile(blob, append(data, '!'), 0o644)
	if out, err := verify(); err == nil {
		t.Fatalf("cosign accepted a signature over other bytes:\n%s", out)
	}

	// The other way: cosign's own encrypted key signs, we verify.
	cmd := exec.Command(cosign, "generate-key-pair", "--output-key-prefix", filepath.Join(dir, "cosign"))
	cmd.Env = append(os.Environ(), "COSIGN_PASSWORD=pw")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("cosign generate-key-pair: %v\n%s", err, out)
	}
	cosignKey, _ := os.ReadFile(filepath.Join(dir, "cosign.key"))
	cosignPub, _ := os.ReadFile(filepath.Join(dir, "cosign.pub"))
	theirs, err := Load(cosignKey, []byte("pw"))
	if err != nil {
		t.Fatalf("a cosign key does not load: %v", err)
	}
	sig, _ = theirs.Sign(data)
	if err := signing.Verify(cosignPub, data, sig); err != nil {
		t.Fatal(err)
	}
}
