package registry

import "github.com/flowgen-dev/flowgen/registry/api"

// The wire types live in package api, shared with the client; the server
// speaks of them by these names.
type (
	// APIError is an error answer (api.Error).
	APIError = api.Error
	// SearchResult is the body of GET /v1/connectors (api.SearchResult).
	SearchResult = api.SearchResult
	// TokenRequest asks for a token (api.TokenRequest).
	TokenRequest = api.TokenRequest
	// TokenInfo is a token as the admin API shows it (api.TokenInfo).
	TokenInfo = api.TokenInfo
	// TokenCreated is a new token with its secret (api.TokenCreated).
	TokenCreated = api.TokenCreated
	// TokenList is the body of GET /v1/admin/tokens (api.TokenList).
	TokenList = api.TokenList
	// GCRequest asks for a garbage collection (api.GCRequest).
	GCRequest = api.GCRequest
	// GCReport is what a collection found and did (api.GCReport).
	GCReport = api.GCReport
	// FlowgenModuleInfo is GET /v1/flowgen-module (api.FlowgenModuleInfo).
	FlowgenModuleInfo = api.FlowgenModuleInfo
)

// Names of a version's blobs and files, and of the upload parts (see api).
const (
	FileArtifact    = api.FileArtifact
	FileManifest    = api.FileManifest
	FileSBOM        = api.FileSBOM
	FileReport      = api.FileReport
	SignatureSuffix = api.SignatureSuffix
	PartManifest    = api.PartManifest
	PartArtifact    = api.PartArtifact
)
