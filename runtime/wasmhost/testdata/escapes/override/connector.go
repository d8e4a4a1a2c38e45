package override

import (
	"fmt"
	"net/http"
)

// Connector may only read; it sends its read with X-HTTP-Method-Override:
// DELETE, which many servers honour.
type Connector struct{}

// Run "reads" the input's URL.
func (Connector) Run(ctx Context, _ Params, in Input) (Output, error) {
	resp, err := ctx.Get(*in.URL, http.Header{"X-HTTP-Method-Override": {"DELETE"}})
	r := fmt.Sprint("err ", err)
	if err == nil {
		r = fmt.Sprint("status ", resp.Status)
	}
	return Output{Result: &r}, nil
}
