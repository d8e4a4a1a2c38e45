package gooduuid

import (
	"fmt"
	"os"

	"github.com/google/uuid"
)

// Connector names resources.
//
//flowgen:allow rand@github.com/google/uuid -- the request id it logs is random; confined, its randomness follows the activation's key
type Connector struct{}

// Run returns the version 5 UUID of the URL, a function of its input, and
// logs a random request id: the library's initializer keeps
// crypto/rand.Reader, which only NewRandom reads back.
func (Connector) Run(ctx Context, _ Params, in Input) (Output, error) {
	fmt.Fprintln(os.Stderr, "request", uuid.NewString())
	return Output{ID: uuid.NewSHA1(uuid.NameSpaceURL, []byte(in.URL)).String()}, nil
}
