package pgdb

import (
	"fmt"
	"io/fs"
)

// MigrationsDir returns the "migrations" directory of an embedded FS, the
// layout every migration set uses.
func MigrationsDir(fsys fs.FS) fs.FS {
	sub, err := fs.Sub(fsys, "migrations")
	if err != nil {
		panic(fmt.Sprintf("embedded migrations: %v", err)) // a build-time layout error
	}
	return sub
}
