// Package api is the registry's HTTP interface as Go values: the wire types
// of requests and answers, the names of a version's files and upload
// parts, and the table of error codes with their HTTP statuses. It is a
// leaf (standard library only), shared by the server and its client, so a
// client links nothing of the server.
package api

import (
	"net/url"
	"time"
)

// State is where a version is in its life.
type State string

// The states. A version is visible to pulls only when Certified.
const (
	Pending    State = "pending"    // uploaded, certification not started
	Certifying State = "certifying" // certification running (resumed after a restart)
	Certified  State = "certified"  // every check passed; signed by the registry
	Rejected   State = "rejected"   // a check failed; the report says which
)

// Key names one version: namespace/connector@version.
type Key struct {
	Namespace, Connector, Version string
}

func (k Key) String() string { return k.Namespace + "/" + k.Connector + "@" + k.Version }

// Path is the API path of the version.
func (k Key) Path() string {
	return "/v1/connectors/" + url.PathEscape(k.Namespace) + "/" + url.PathEscape(k.Connector) + "/versions/" + url.PathEscape(k.Version)
}

// Version is one published connector version. Namespace, Connector, Version
// and Digest never change once created.
type Version struct {
	Namespace string `json:"namespace"`
	Connector string `json:"connector"`
	Version   string `json:"version"`
	// Module and ModuleVersion are the Go module identity of the artifact.
	Module        string `json:"module"`
	ModuleVersion string `json:"module_version"`
	// Digest and Size describe the artifact zip.
	Digest string `json:"digest"`
	Size   int64  `json:"size"`
	State  State  `json:"state"`
	// Progress is the latest progress line of certification.
	Progress string `json:"progress,omitempty"`
	// Blobs maps evidence names (report.json, sbom.spdx.json,
	// artifact.zip.sig, ...) to blob digests.
	Blobs map[string]string `json:"blobs,omitempty"`
	// What the connector declares, for search and pull policies.
	Provider     string   `json:"provider,omitempty"`
	Effects      string   `json:"effects,omitempty"`
	Determinism  string   `json:"determinism,omitempty"`
	Capabilities []string `json:"capabilities,omitempty"`
	Egress       []string `json:"egress,omitempty"`
	Summary      string   `json:"summary,omitempty"`
	// Reason says why certification rejected the version (the report has
	// the details).
	Reason string `json:"reason,omitempty"`
	// Publisher names the token that published the version.
	Publisher string `json:"publisher,omitempty"`
	// Deprecated and Yanked hold the reason when set.
	Deprecated string    `json:"deprecated,omitempty"`
	Yanked     string    `json:"yanked,omitempty"`
	Created    time.Time `json:"created"`
	Updated    time.Time `json:"updated"`
}

// Key returns the version's key.
func (v Version) Key() Key { return Key{v.Namespace, v.Connector, v.Version} }

// Names of a version's blobs (Version.Blobs keys) and of the files the API
// serves for it.
const (
	FileArtifact = "artifact.zip"
	FileManifest = "artifact.json"
	FileSBOM     = "sbom.spdx.json"
	FileReport   = "report.json"
	// FileModule is the connector compiled to WebAssembly: the bytes
	// every check ran and production runs confined; the report names its
	// digest.
	FileModule      = "module.wasm"
	SignatureSuffix = ".sig"
)

// The multipart form names of an upload, in this order.
const (
	PartManifest = "manifest"
	PartArtifact = "artifact"
)

// SearchResult is the body of GET /v1/connectors.
type SearchResult struct {
	Versions []Version `json:"versions"`
}

// TokenRequest asks for a token.
type TokenRequest struct {
	Name   string   `json:"name"`
	Scopes []string `json:"scopes"`
	// ExpiresIn is a Go duration ("720h"); empty: until revoked.
	ExpiresIn string `json:"expires_in,omitempty"`
	// Policy is a pull policy (YAML) to bind to the token.
	Policy string `json:"policy,omitempty"`
}

// TokenInfo is a token as the admin API shows it: everything but its hash.
type TokenInfo struct {
	ID      string    `json:"id"`
	Name    string    `json:"name"`
	Scopes  []string  `json:"scopes"`
	Created time.Time `json:"created"`
	Revoked time.Time `json:"revoked,omitzero"`
	Expires time.Time `json:"expires,omitzero"`
	Policy  bool      `json:"policy"`
}

// TokenCreated is a new token with its secret, shown this once.
type TokenCreated struct {
	TokenInfo
	Secret string `json:"secret"`
}

// TokenList is the body of GET /v1/admin/tokens.
type TokenList struct {
	Tokens []TokenInfo `json:"tokens"`
}

// GCRequest asks for a garbage collection.
type GCRequest struct {
	DryRun bool `json:"dry_run"`
	// Grace is a Go duration; empty: the server's.
	Grace string `json:"grace,omitempty"`
}

// GCReport is what a collection found and did.
type GCReport struct {
	Blobs        int      `json:"blobs"`
	Referenced   int      `json:"referenced"`
	Young        int      `json:"young"`
	Removed      []string `json:"removed"`
	RemovedBytes int64    `json:"removed_bytes"`
	DryRun       bool     `json:"dry_run"`
}

// FlowgenModuleInfo is GET /v1/flowgen-module: the flowgen module the
// registry certifies with and serves through its Go module proxy, with
// the registry's signature of the zip, so a client can check what it
// downloads against the key it trusts.
type FlowgenModuleInfo struct {
	Module    string `json:"module"`
	Version   string `json:"version"`
	ZipSHA256 string `json:"zip_sha256"`
	// Signature is the registry's signature of the zip, base64 (the form
	// cosign verify-blob reads).
	Signature string `json:"signature"`
}
