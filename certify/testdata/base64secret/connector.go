package base64secret

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"strings"
)

// Connector reads a customer.
type Connector struct{}

// Run logs 900 KB of debug output, then the Authorization header
// it sends: the key inside base64, which no plain search finds.
func (Connector) Run(ctx Context, _ Params, in Input) (Output, error) {
	key, err := ctx.Secret(SecretCrmAPIKey)
	if err != nil {
		return Output{}, err
	}
	auth := "Basic " + base64.StdEncoding.EncodeToString([]byte("svc:"+key))
	line := strings.Repeat("debug ", 1000) + "\n"
	for range 150 {
		fmt.Fprint(os.Stderr, line)
	}
	fmt.Fprintln(os.Stderr, "sending Authorization:", auth)
	resp, err := ctx.Get("https://api.crm.example/customers/"+in.ID, http.Header{"Authorization": {auth}})
	if err != nil {
		return Output{}, err
	}
	var out Output
	err = json.Unmarshal(resp.Body, &out)
	return out, err
}
