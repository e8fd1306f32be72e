package progress

import "errors"

// Errors returned by this package, grouped by the step that reports them.
// Check them with [errors.Is].
var (
	// ErrCorrupt reports a marker file that cannot be read as a task: too
	// large, not a JSON object, or without a task id. The file is left as
	// it is.
	ErrCorrupt = errors.New("progress: corrupt task marker")

	// ErrHookInput reports hook input that is not a JSON object with a
	// string session_id, or that is larger than [MaxHookInput]. The hook
	// does nothing.
	ErrHookInput = errors.New("progress: unusable hook input")
)
