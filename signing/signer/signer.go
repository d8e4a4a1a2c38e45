// Package signer signs flowgen artifacts with ECDSA P-256 keys through
// github.com/sigstore/sigstore, in the form stock cosign checks offline
// and package signing verifies. Private keys are PKCS#8 PEM, encrypted in
// sigstore's format when a password is given (cosign reads those too).
package signer

import (
	"bytes"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"encoding/base64"
	"fmt"

	"github.com/sigstore/sigstore/pkg/cryptoutils"
	"github.com/sigstore/sigstore/pkg/signature"
)

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

// Load reads a PEM private key (encrypted with password, or not).
func Load(privPEM, password []byte) (*Signer, error) {
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
