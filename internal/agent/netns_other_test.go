//go:build !linux

package agent_test

import "testing"

// The test itself is in netns_linux_test.go.
func TestAgentsAcrossNetworkNamespaces(t *testing.T) {
	t.Skip("network namespaces and veth links exist on Linux only")
}
