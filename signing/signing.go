// Package signing signs and verifies flowgen artifacts (connector zips,
// SBOMs, certification reports) with ECDSA P-256 keys through
// github.com/sigstore/sigstore, in the form stock cosign checks offline:
//
//	cosign verify-blob --key flowgen.pub --signature FILE.sig --insecure-ignore-tlog FILE
//
// A signature is the base64 of an ASN.1 ECDSA signature over the SHA-256 of
// the file's bytes. Private keys are PKCS#8 PEM, encrypted in sigstore's
// format when a password is given (cosign reads those too); public keys are
// PKIX PEM.
package signing

import (
	"bytes"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"

	"github.com/sigstore/sigstore/pkg/cryptoutils"
	"github.com/sigstore/sigstore/pkg/signature"
)

// ErrBadSignature is wrapped by Verify when the signature does not match.
var ErrBadSignature = errors.New("signature does not match")

// GenerateKey returns a new ECDSA P-256 key pair as PEM. With a non-empty
// password the private key is encrypted.
func GenerateKey(password []byte) (privPEM, pubPEM []byte, err error) {
	var pf cryptoutils.PassFunc
	if len(password) > 0 {
		pf = func(bool) ([]byte, error) { return password, nil }
	}
	return cryptoutils.GeneratePEMEncodedECDSAKeyPair(elliptic.P256(), pf)
}

// Signer signs with one private key.
type Signer struct {
	sv *signature.ECDSASignerVerifier
}

// LoadSigner reads a PEM private key (encrypted with password, or not).
func LoadSigner(privPEM, password []byte) (*Signer, error) {
	pf := func(bool) ([]byte, error) { return password, nil }
	key, err := cryptoutils.UnmarshalPEMToPrivateKey(privPEM, pf)
	if err != nil {
		return nil, fmt.Errorf("private key: %w", err)
	}
	ec, ok := key.(*ecdsa.PrivateKey)
	if !ok || ec.Curve != elliptic.P256() {
		return nil, fmt.Errorf("private key: want ECDSA P-256, got %T", key)
	}
	sv, err := signature.LoadECDSASignerVerifier(ec, crypto.SHA256)
	if err != nil {
		return nil, fmt.Errorf("private key: %w", err)
	}
	return &Signer{sv: sv}, nil
}

// Sign returns the base64 signature of data.
func (s *Signer) Sign(data []byte) ([]byte, error) {
	sig, err := s.sv.SignMessage(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("sign: %w", err)
	}
	return []byte(base64.StdEncoding.EncodeToString(sig)), nil
}

// PublicKey returns the signer's public key as PEM.
func (s *Signer) PublicKey() ([]byte, error) {
	pub, err := s.sv.PublicKey()
	if err != nil {
		return nil, err
	}
	return cryptoutils.MarshalPublicKeyToPEM(pub)
}

// CheckPublicKey reports whether pubPEM is an ECDSA public key that Verify
// can use.
func CheckPublicKey(pubPEM []byte) error {
	_, err := loadVerifier(pubPEM)
	return err
}

func loadVerifier(pubPEM []byte) (signature.Verifier, error) {
	pub, err := cryptoutils.UnmarshalPEMToPublicKey(pubPEM)
	if err != nil {
		return nil, fmt.Errorf("public key: %w", err)
	}
	ec, ok := pub.(*ecdsa.PublicKey)
	if !ok {
		return nil, fmt.Errorf("public key: want ECDSA, got %T", pub)
	}
	v, err := signature.LoadECDSAVerifier(ec, crypto.SHA256)
	if err != nil {
		return nil, fmt.Errorf("public key: %w", err)
	}
	return v, nil
}

// Verify checks a base64 signature of data against a PEM public key.
func Verify(pubPEM, data, sigB64 []byte) error {
	v, err := loadVerifier(pubPEM)
	if err != nil {
		return err
	}
	sig, err := base64.StdEncoding.DecodeString(string(bytes.TrimSpace(sigB64)))
	if err != nil {
		return fmt.Errorf("%w: not base64: %v", ErrBadSignature, err)
	}
	if err := v.VerifySignature(bytes.NewReader(sig), bytes.NewReader(data)); err != nil {
		return fmt.Errorf("%w: %v", ErrBadSignature, err)
	}
	return nil
}

// Fingerprint names a public key (PEM) for people and records:
// "sha256:" and the hex SHA-256 of its PEM bytes, trailing space removed.
func Fingerprint(pubPEM []byte) string {
	sum := sha256.Sum256(bytes.TrimSpace(pubPEM))
	return "sha256:" + hex.EncodeToString(sum[:])
}
