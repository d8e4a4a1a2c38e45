package probe

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
)

// Connector does what its input says.
type Connector struct{}

type request struct {
	URL    string            `json:"url"`
	Header map[string]string `json:"header"`
}

// Run reads.
func (Connector) Run(ctx Context, _ Params, in Input) (Output, error) {
	var b strings.Builder
	switch in.Do {
	case "get":
		// requests is a JSON list of {url, header}; each is sent in
		// order and its outcome reported on one line.
		var reqs []request
		if in.Requests != nil {
			if err := json.Unmarshal([]byte(*in.Requests), &reqs); err != nil {
				return Output{}, err
			}
		}
		for _, q := range reqs {
			h := http.Header{}
			for k, v := range q.Header {
				h[k] = []string{v} // keys as given: not canonicalized
			}
			resp, err := ctx.Get(q.URL, h)
			if err != nil {
				fmt.Fprintf(&b, "%s => error %v\n", q.URL, err)
				continue
			}
			fmt.Fprintf(&b, "%s => %d %q\n", q.URL, resp.Status, resp.Body)
		}
	case "secret":
		v, err := ctx.Secret(SecretHandle(*in.Handle))
		fmt.Fprintf(&b, "secret %s = %q (%v)", *in.Handle, v, err)
	case "abi":
		b.WriteString(rawABI())
	}
	r := b.String()
	return Output{Result: &r}, nil
}
