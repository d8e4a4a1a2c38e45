// Package signing verifies flowgen's signatures (connector zips, SBOMs,
// certification reports) in the form stock cosign checks offline:
//
//	cosign verify-blob --key flowgen.pub --signature FILE.sig --insecure-ignore-tlog FILE
//
// A signature is the base64 of an ASN.1 ECDSA signature over the SHA-256
// of the file's bytes; public keys are PKIX PEM. Verifying needs nothing
// beyond the standard library, so that whatever only reads signed
// evidence (pulling, policy) links no signer; package signer signs.
package signing

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
)

// ErrBadSignature is wrapped by Verify when the signature does not match.
var ErrBadSignature = errors.New("signature does not match")

// CheckPublicKey reports whether pubPEM is an ECDSA public key that Verify
// can use.
func CheckPublicKey(pubPEM []byte) error {
	_, err := publicKey(pubPEM)
	return err
}

// publicKey parses a PEM PKIX ECDSA public key.
func publicKey(pubPEM []byte) (*ecdsa.PublicKey, error) {
	block, _ := pem.Decode(pubPEM)
	if block == nil {
		return nil, errors.New("public key: no PEM block")
	}
	pub, err := x509.ParsePKIXPublicKey(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("public key: %w", err)
	}
	ec, ok := pub.(*ecdsa.PublicKey)
	if !ok {
		return nil, fmt.Errorf("public key: want ECDSA, got %T", pub)
	}
	return ec, nil
}

// Verify checks a base64 signature of data against a PEM public key.
func Verify(pubPEM, data, sigB64 []byte) error {
	pub, err := publicKey(pubPEM)
	if err != nil {
		return err
	}
	sig, err := base64.StdEncoding.DecodeString(string(bytes.TrimSpace(sigB64)))
	if err != nil {
		return fmt.Errorf("%w: not base64: %v", ErrBadSignature, err)
	}
	digest := sha256.Sum256(data)
	if !ecdsa.VerifyASN1(pub, digest[:], sig) {
		return fmt.Errorf("%w: invalid ECDSA signature over the SHA-256 of the data", ErrBadSignature)
	}
	return nil
}

// Fingerprint names a public key (PEM) for people and records:
// "sha256:" and the hex SHA-256 of its PEM bytes, trailing space removed.
func Fingerprint(pubPEM []byte) string {
	sum := sha256.Sum256(bytes.TrimSpace(pubPEM))
	return "sha256:" + hex.EncodeToString(sum[:])
}
