// Package templates holds the text templates flowgen init scaffolds new
// connectors from. Each file under connector/ becomes one file of the new
// package, its name without the .tmpl suffix.
package templates

import (
	"embed"
	"io/fs"
)

//go:embed connector
var files embed.FS

// Connector is the file tree of a new connector package.
func Connector() fs.FS {
	sub, err := fs.Sub(files, "connector")
	if err != nil {
		panic(err) // the directory is embedded above; cannot fail
	}
	return sub
}
