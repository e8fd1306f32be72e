//go:build !unix

package bolt

import (
	"log/slog"
	"os"
)

// tightenMode does nothing here: this system's permissions are not Unix
// mode bits.
func tightenMode(*os.File, string, os.FileInfo, *slog.Logger) {}
