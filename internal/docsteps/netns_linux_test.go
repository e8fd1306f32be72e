//go:build linux

package docsteps

import (
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// isolate makes cmd start in a network namespace of its own, whose
// loopback has every port free: the walkthrough then uses the documents'
// ports without meeting a bus the user runs, or another run of this test.
// Without root the namespace comes with a user namespace that maps the
// user to itself, and the process keeps CAP_NET_ADMIN there to bring its
// loopback up. cmd must have SysProcAttr set (ownGroup sets it).
func isolate(cmd *exec.Cmd) {
	a := cmd.SysProcAttr
	a.Cloneflags = syscall.CLONE_NEWNET
	if uid, gid := os.Getuid(), os.Getgid(); uid != 0 {
		a.Cloneflags |= syscall.CLONE_NEWUSER
		a.UidMappings = []syscall.SysProcIDMap{{ContainerID: uid, HostID: uid, Size: 1}}
		a.GidMappings = []syscall.SysProcIDMap{{ContainerID: gid, HostID: gid, Size: 1}}
		a.AmbientCaps = []uintptr{unix.CAP_NET_ADMIN}
	}
}

// loopbackUp brings up the loopback interface of this process's network
// namespace, which a new namespace starts with down.
func loopbackUp() error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("socket: %w", err)
	}
	defer unix.Close(fd)
	ifr, err := unix.NewIfreq("lo")
	if err != nil {
		return err
	}
	if err := unix.IoctlIfreq(fd, unix.SIOCGIFFLAGS, ifr); err != nil {
		return fmt.Errorf("lo: get flags: %w", err)
	}
	ifr.SetUint16(ifr.Uint16() | unix.IFF_UP)
	if err := unix.IoctlIfreq(fd, unix.SIOCSIFFLAGS, ifr); err != nil {
		return fmt.Errorf("lo: bring up: %w", err)
	}
	return nil
}

// netnsMain brings the loopback up and replaces this process with bash
// running script, in the environment it was given less netnsEnv.
func netnsMain(script string) int {
	if err := loopbackUp(); err != nil {
		fmt.Fprintf(os.Stderr, "docsteps: %v\n", err)
		return 1
	}
	bash, err := exec.LookPath("bash")
	if err != nil {
		fmt.Fprintf(os.Stderr, "docsteps: %v\n", err)
		return 1
	}
	env := slices.DeleteFunc(os.Environ(), func(kv string) bool { return strings.HasPrefix(kv, netnsEnv+"=") })
	err = syscall.Exec(bash, []string{"bash", script}, env)
	fmt.Fprintf(os.Stderr, "docsteps: exec bash: %v\n", err)
	return 1
}
