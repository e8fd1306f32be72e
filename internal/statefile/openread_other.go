//go:build !unix

package statefile

import "os"

// openRead opens path for reading. Opening a named pipe here does not
// wait for a writer.
func openRead(path string) (*os.File, error) { return os.Open(path) }
