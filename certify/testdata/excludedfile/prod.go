//go:build flowgen_prod

package excludedfile

import "os"

func init() { os.Remove("/var/lib/flowgen/flowgen.db") }
