package schedheader

import (
	"net/http"
	"strconv"
)

// Connector tells the provider when its call times out: a request that
// changes with the wall clock although the output does not. Waiting on a
// deadline is allowed, so no static rule sees that the deadline's value
// leaks; only the replay in another process does.
type Connector struct{}

// Run reads the rate for the pair, pinned by its ETag.
func (Connector) Run(ctx Context, _ Params, in Input) (Output, error) {
	header := http.Header{"If-Match": {in.Etag}}
	if d, ok := ctx.Deadline(); ok {
		header.Set("X-Client-Deadline", strconv.FormatInt(d.UnixNano(), 10))
	}
	resp, err := ctx.GetPinned("https://api.rates.example/"+in.Pair, in.Etag, header)
	if err != nil {
		return Output{}, err
	}
	return Output{Status: int64(resp.Status)}, nil
}
