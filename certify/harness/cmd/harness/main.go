// Command harness is the program certification runs in its sandbox: see
// package harness.
package main

import "github.com/flowgen-dev/flowgen/certify/harness"

func main() { harness.Main() }
