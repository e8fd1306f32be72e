//go:build hosttest

package hosttest

import (
	"errors"
	"testing"
)

// A failed install is reported by npm's code and first message when npm
// printed them, and by how npm ended otherwise.
func TestNPMReasonPrefersNPMsOwnWords(t *testing.T) {
	exit := errors.New("exit status 1")
	tests := []struct {
		name, out, want string
	}{
		{"code and message", "npm error code E404\nnpm error 404 Not Found - GET https://x\n", "E404: 404 Not Found - GET https://x"},
		{"old spelling", "npm ERR! code ENOTFOUND\nnpm ERR! network request failed\n", "ENOTFOUND: network request failed"},
		{"message only", "npm error something broke\n", "something broke"},
		{"code only", "npm error code EACCES\nnpm error path /x\n", "exit status 1: EACCES"},
		{"nothing from npm", "", "exit status 1"},
	}
	for _, tt := range tests {
		if got := npmReason(exit, []byte(tt.out)); got != tt.want {
			t.Errorf("%s: npmReason = %q, want %q", tt.name, got, tt.want)
		}
	}
}
