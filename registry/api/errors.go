package api

import (
	"fmt"
	"net/http"
	"sort"
	"time"
)

// ErrorCode is the stable, machine-readable code of an error answer. Every
// code the registry sends is in the table below with the HTTP status it
// always travels with; clients branch on the code, never on the message.
type ErrorCode string

// The error codes.
const (
	CodeBadRequest         ErrorCode = "bad_request"
	CodeBadJSON            ErrorCode = "bad_json"
	CodeBadName            ErrorCode = "bad_name"
	CodeBadVersion         ErrorCode = "bad_version"
	CodeBadUpload          ErrorCode = "bad_upload"
	CodeBadManifest        ErrorCode = "bad_manifest"
	CodeBadArtifact        ErrorCode = "bad_artifact"
	CodeBadQuery           ErrorCode = "bad_query"
	CodeBadPolicy          ErrorCode = "bad_policy"
	CodeBadToken           ErrorCode = "bad_token"
	CodeBadReason          ErrorCode = "bad_reason"
	CodeDigestMismatch     ErrorCode = "digest_mismatch"
	CodeFlowgenVersion     ErrorCode = "flowgen_version"
	CodeUnauthorized       ErrorCode = "unauthorized"
	CodeForbidden          ErrorCode = "forbidden"
	CodePolicy             ErrorCode = "policy"
	CodeNotFound           ErrorCode = "not_found"
	CodeTimeout            ErrorCode = "timeout"
	CodeConflict           ErrorCode = "conflict"
	CodeModuleTaken        ErrorCode = "module_taken"
	CodeTooLarge           ErrorCode = "too_large"
	CodeUnsupportedMedia   ErrorCode = "unsupported_media_type"
	CodeInternal           ErrorCode = "internal"
	CodeTampered           ErrorCode = "tampered"
	CodeBusy               ErrorCode = "busy"
	CodeTooManyUploads     ErrorCode = "too_many_uploads"
	CodeStorageUnavailable ErrorCode = "storage_unavailable"
	// CodeHTTP is the client's code for an answer that carried no error
	// body of the registry's (a proxy's error page, say); it has no fixed
	// status.
	CodeHTTP ErrorCode = "http"
)

// codeInfo is one row of the table: the status and what the code means.
type codeInfo struct {
	status  int
	meaning string
}

var codes = map[ErrorCode]codeInfo{
	CodeBadRequest:         {http.StatusBadRequest, "the request is malformed"},
	CodeBadJSON:            {http.StatusBadRequest, "the JSON body does not decode into the expected object"},
	CodeBadName:            {http.StatusBadRequest, "a namespace or connector name is not valid"},
	CodeBadVersion:         {http.StatusBadRequest, "the version is not strict semantic versioning"},
	CodeBadUpload:          {http.StatusBadRequest, "the multipart upload is malformed or out of order"},
	CodeBadManifest:        {http.StatusBadRequest, "the artifact manifest is invalid or does not match the path"},
	CodeBadArtifact:        {http.StatusBadRequest, "the artifact zip is invalid"},
	CodeBadQuery:           {http.StatusBadRequest, "a search parameter is invalid"},
	CodeBadPolicy:          {http.StatusBadRequest, "a pull policy does not parse"},
	CodeBadToken:           {http.StatusBadRequest, "a token request is invalid"},
	CodeBadReason:          {http.StatusBadRequest, "a yank or deprecation needs a reason"},
	CodeDigestMismatch:     {http.StatusBadRequest, "the bytes do not match their declared digest"},
	CodeFlowgenVersion:     {http.StatusBadRequest, "the artifact needs a flowgen version this registry does not serve"},
	CodeUnauthorized:       {http.StatusUnauthorized, "no valid token"},
	CodeForbidden:          {http.StatusForbidden, "the token lacks the scope or namespace"},
	CodePolicy:             {http.StatusForbidden, "the token's pull policy refuses the version"},
	CodeNotFound:           {http.StatusNotFound, "no such version (or one the token may not see), file or route"},
	CodeTimeout:            {http.StatusRequestTimeout, "the request body stalled, was too slow or outlasted the upload deadline"},
	CodeConflict:           {http.StatusConflict, "the version exists with other bytes (versions are write-once)"},
	CodeModuleTaken:        {http.StatusConflict, "another namespace owns the Go module path"},
	CodeTooLarge:           {http.StatusRequestEntityTooLarge, "the body is over its limit (the artifact size, 64 KiB for JSON)"},
	CodeUnsupportedMedia:   {http.StatusUnsupportedMediaType, "the body has the wrong content type"},
	CodeInternal:           {http.StatusInternalServerError, "the server failed; its log has the details"},
	CodeTampered:           {http.StatusInternalServerError, "stored evidence does not match its digest"},
	CodeBusy:               {http.StatusServiceUnavailable, "too many uploads at once; retry later"},
	CodeTooManyUploads:     {http.StatusTooManyRequests, "the token or its namespace has as many uploads in flight as it may"},
	CodeStorageUnavailable: {http.StatusServiceUnavailable, "blob or metadata storage is unreachable"},
}

// Status is the HTTP status the code travels with (500 for a code not in
// the table).
func (c ErrorCode) Status() int {
	if info, ok := codes[c]; ok {
		return info.status
	}
	return http.StatusInternalServerError
}

// Meaning says in a few words what the code means.
func (c ErrorCode) Meaning() string { return codes[c].meaning }

// Errorf is an error answer with this code, its status and a message.
func (c ErrorCode) Errorf(format string, args ...any) *Error {
	return &Error{Status: c.Status(), Code: c, Message: fmt.Sprintf(format, args...)}
}

// Codes lists every code of the table, sorted.
func Codes() []ErrorCode {
	out := make([]ErrorCode, 0, len(codes))
	for c := range codes {
		out = append(out, c)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

// Error is an error answer: {"error": {"code": ..., "message": ...}} with
// the HTTP status of its code.
type Error struct {
	Status  int       `json:"-"`
	Code    ErrorCode `json:"code"`
	Message string    `json:"message"`
	// Details lists the individual problems, e.g. every failed policy rule.
	Details []string `json:"details,omitempty"`
	// RetryAfter is the wait a client read from the answer's Retry-After
	// header (429 and 503 answers); zero when there was none.
	RetryAfter time.Duration `json:"-"`
}

func (e *Error) Error() string { return fmt.Sprintf("%d %s: %s", e.Status, e.Code, e.Message) }
