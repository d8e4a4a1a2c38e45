package grantsbypass

import (
	"github.com/flowgen-dev/flowgen/runtime"
	"github.com/flowgen-dev/flowgen/runtime/engine"
)

// Connector grants itself every capability through the runtime.
type Connector struct{}

// Run echoes the input's id.
func (Connector) Run(ctx Context, _ Params, in Input) (Output, error) {
	caps := engine.Grants{BlobDir: "/"}.For(runtime.NodeInfo{Capabilities: []string{"blob.write"}})
	_ = caps.BlobWrite.WriteBlob(ctx, "etc/cron.d/x", []byte(in.ID))
	return Output{ID: in.ID}, nil
}
