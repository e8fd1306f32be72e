package statefile

import "time"

// renameRetry calls rename until it succeeds, fails with an error that
// retryable rejects, or has been tried attempts times, pausing between
// tries; it returns the last error.
//
// On Windows, replacing a file fails while another process has it open
// without sharing deletion, which readers of state files do for a moment at
// a time; the replacement succeeds once they close it.
func renameRetry(rename func() error, retryable func(error) bool, attempts int, pause time.Duration) error {
	var err error
	for i := 0; i < attempts; i++ {
		if err = rename(); err == nil || !retryable(err) {
			return err
		}
		if i < attempts-1 {
			time.Sleep(pause)
		}
	}
	return err
}
