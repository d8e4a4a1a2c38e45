package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/flowgen-dev/flowgen/certify"
	"github.com/flowgen-dev/flowgen/signing"
	"github.com/flowgen-dev/flowgen/signing/signer"
)

const passwordEnv = "FLOWGEN_KEY_PASSWORD"

const keygenUsage = `Usage: flowgen keygen [--out DIR] [--name NAME]

Generates an ECDSA P-256 signing key pair: DIR/NAME.key (private, mode 0600)
and DIR/NAME.pub (public). When $` + passwordEnv + ` is set the private key is
encrypted with it (sigstore's format, which cosign reads too). Existing
files are never overwritten.

Flags:
`

const signUsage = `Usage: flowgen sign --key KEY FILE...

Signs each FILE, writing FILE.sig: the base64 ECDSA signature over the
SHA-256 of the file, which stock cosign verifies offline:

	cosign verify-blob --key NAME.pub --signature FILE.sig --insecure-ignore-tlog FILE

An encrypted KEY is opened with $` + passwordEnv + `.

Flags:
`

const verifyUsage = `Usage: flowgen verify --key PUB FILE|CERT_DIR...

Checks FILE.sig against each FILE and the public key PUB; names every file
whose signature is missing or does not match.

A CERT_DIR (what flowgen certify --key writes) is checked as a whole: the
signatures of artifact.zip, sbom.spdx.json and report.json, that the report
and the SBOM name the digest of artifact.zip, and that no check failed.

Exit status: 0 all verified, 1 a signature is missing or wrong, 2 usage or I/O error.

Flags:
`

func runKeygen(e *env, args []string) int {
	fs := newFlagSet(e, "keygen", keygenUsage)
	out := fs.String("out", ".", "directory to write the key pair into")
	name := fs.String("name", "flowgen", "base name of the key files")
	if _, err := parseFlags(fs, args); err != nil {
		return flagExit(err)
	}
	priv, pub := filepath.Join(*out, *name+".key"), filepath.Join(*out, *name+".pub")
	for _, p := range []string{priv, pub} {
		if _, err := os.Stat(p); err == nil {
			fmt.Fprintf(e.stderr, "flowgen keygen: %s already exists; nothing written\n", p)
			return exitUsage
		}
	}
	password := []byte(e.getenv(passwordEnv))
	privPEM, pubPEM, err := signer.GenerateKey(password)
	if err == nil {
		err = os.MkdirAll(*out, 0o755)
	}
	if err == nil {
		err = os.WriteFile(priv, privPEM, 0o600)
	}
	if err == nil {
		err = os.WriteFile(pub, pubPEM, 0o644)
	}
	if err != nil {
		os.Remove(priv)
		fmt.Fprintf(e.stderr, "flowgen keygen: %v\n", err)
		return exitUsage
	}
	fmt.Fprintf(e.stdout, "wrote %s and %s\n", priv, pub)
	if len(password) == 0 {
		fmt.Fprintf(e.stderr, "flowgen keygen: the private key is not encrypted; set %s to encrypt it\n", passwordEnv)
	}
	return exitOK
}

func runSign(e *env, args []string) int {
	fs := newFlagSet(e, "sign", signUsage)
	key := fs.String("key", "", "private key file (required)")
	files, err := parseFlags(fs, args)
	if err != nil {
		return flagExit(err)
	}
	if *key == "" || len(files) == 0 {
		fmt.Fprint(e.stderr, "flowgen sign: want --key and at least one FILE\n\n")
		fs.Usage()
		return exitUsage
	}
	keyPEM, err := os.ReadFile(*key)
	if err != nil {
		fmt.Fprintf(e.stderr, "flowgen sign: %v\n", err)
		return exitUsage
	}
	s, err := signer.Load(keyPEM, []byte(e.getenv(passwordEnv)))
	if err != nil {
		fmt.Fprintf(e.stderr, "flowgen sign: %s: %v\n", *key, err)
		return exitUsage
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err == nil {
			var sig []byte
			if sig, err = s.Sign(data); err == nil {
				err = os.WriteFile(f+".sig", sig, 0o644)
			}
		}
		if err != nil {
			fmt.Fprintf(e.stderr, "flowgen sign: %v\n", err)
			return exitUsage
		}
		fmt.Fprintf(e.stdout, "signed %s -> %s.sig\n", f, f)
	}
	return exitOK
}

func runVerify(e *env, args []string) int {
	fs := newFlagSet(e, "verify", verifyUsage)
	key := fs.String("key", "", "public key file (required)")
	files, err := parseFlags(fs, args)
	if err != nil {
		return flagExit(err)
	}
	if *key == "" || len(files) == 0 {
		fmt.Fprint(e.stderr, "flowgen verify: want --key and at least one FILE\n\n")
		fs.Usage()
		return exitUsage
	}
	pub, err := os.ReadFile(*key)
	if err != nil {
		fmt.Fprintf(e.stderr, "flowgen verify: %v\n", err)
		return exitUsage
	}
	bad := 0
	for _, f := range files {
		if info, err := os.Stat(f); err == nil && info.IsDir() {
			v, err := certify.Verify(f, pub)
			if err != nil {
				fmt.Fprintf(e.stderr, "flowgen verify: %s: %v\n", *key, err)
				return exitUsage
			}
			for _, name := range v.Verified {
				fmt.Fprintf(e.stdout, "OK      %s\n", filepath.Join(f, name))
			}
			for _, p := range v.Problems {
				fmt.Fprintf(e.stdout, "BAD     %s: %s\n", f, p)
			}
			if v.OK() {
				fmt.Fprintf(e.stdout, "CERTIFIED %s %s: %s@%s %s\n", v.Report.Connector, v.Report.Version, v.Report.Module, v.Report.ModuleVersion, v.Report.ArtifactDigest)
			} else {
				bad++
			}
			continue
		}
		data, err := os.ReadFile(f)
		if err != nil {
			fmt.Fprintf(e.stderr, "flowgen verify: %v\n", err)
			return exitUsage
		}
		sig, err := os.ReadFile(f + ".sig")
		if err == nil {
			err = signing.Verify(pub, data, sig)
		}
		switch {
		case errors.Is(err, os.ErrNotExist):
			fmt.Fprintf(e.stdout, "MISSING %s: no %s.sig\n", f, f)
			bad++
		case errors.Is(err, signing.ErrBadSignature):
			fmt.Fprintf(e.stdout, "BAD     %s: %v\n", f, err)
			bad++
		case err != nil:
			fmt.Fprintf(e.stderr, "flowgen verify: %v\n", err)
			return exitUsage
		default:
			fmt.Fprintf(e.stdout, "OK      %s\n", f)
		}
	}
	if bad > 0 {
		return exitProblems
	}
	return exitOK
}
