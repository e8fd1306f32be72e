//go:build hosttest

package hosttest

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// codexDaemonDisk is the free space TestCodexQueueDaemon wants on the
// file system of the Codex home: codex app-server daemon start copies the
// CLI package, about 0.4 GB, into it.
const codexDaemonDisk = 2 << 30

// daemonHome returns a new Codex home folder for a test that starts Codex's
// shared daemon, skipping the test with -short or when the folder's file
// system has less than [codexDaemonDisk] free.
func daemonHome(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("hosttest: skipping: starting the Codex daemon copies 0.4 GB")
	}
	home := t.TempDir()
	var fs syscall.Statfs_t
	if err := syscall.Statfs(home, &fs); err != nil {
		t.Fatalf("hosttest: statfs %s: %v", home, err)
	}
	if free := fs.Bavail * uint64(fs.Bsize); free < codexDaemonDisk {
		t.Skipf("hosttest: skipping: %d MB free under %s, the Codex daemon needs %d MB", free>>20, home, codexDaemonDisk>>20)
	}
	return home
}

// codexDaemonTimeout bounds codex app-server daemon start and stop,
// copying the package included.
const codexDaemonTimeout = 2 * time.Minute

// stopDaemon runs codex app-server daemon stop, then kills what is left of
// the processes with h's CODEX_HOME, the pid-update-loop helper among them.
func (h *codexHost) stopDaemon(t testing.TB) {
	t.Helper()
	// The daemon and its helper listen on sockets in a folder of the
	// system's temporary folder, which they leave behind.
	var socks []string
	for _, p := range codexHomeProcs(t, h.codexHome) {
		socks = append(socks, unixSockets(p.pid)...)
	}
	defer func() {
		for _, sock := range socks {
			if strings.HasPrefix(sock, filepath.Join(os.TempDir(), "codex-daemon-")) {
				os.Remove(sock)
				os.Remove(sock + ".lock")
			}
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), codexDaemonTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, h.bin, "app-server", "daemon", "stop")
	cmd.Dir, cmd.Env = h.dir, h.env
	out, err := cmd.CombinedOutput()
	t.Logf("codex app-server daemon stop: %v %s", err, strings.TrimSpace(string(out)))
	deadline := time.Now().Add(exitTimeout)
	for {
		left := codexHomeProcs(t, h.codexHome)
		if len(left) == 0 {
			return
		}
		for _, p := range left {
			t.Logf("killing %d, left after the stop: %q", p.pid, p.argv)
			syscall.Kill(p.pid, syscall.SIGKILL)
		}
		if time.Now().After(deadline) {
			t.Errorf("hosttest: processes of %s still running after SIGKILL", h.codexHome)
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// codexHomeProc is a process whose environment names a Codex home.
type codexHomeProc struct {
	pid  int
	argv []string
}

// codexHomeProcs returns the running processes whose environment has
// CODEX_HOME=codexHome, other than zombies.
func codexHomeProcs(t testing.TB, codexHome string) []codexHomeProc {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatalf("hosttest: %v", err)
	}
	want := []byte("CODEX_HOME=" + codexHome + "\x00")
	var found []codexHomeProc
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		env, err := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
		if err != nil || !bytes.Contains(append([]byte{0}, env...), append([]byte{0}, want...)) {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if i := bytes.LastIndexByte(stat, ')'); err != nil || i < 0 || bytes.HasPrefix(stat[i+1:], []byte(" Z")) {
			continue
		}
		cmdline, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		found = append(found, codexHomeProc{pid, strings.Split(strings.TrimSuffix(string(cmdline), "\x00"), "\x00")})
	}
	return found
}

// unixSockets returns the paths of the Unix sockets that the process pid
// has open, from /proc/net/unix.
func unixSockets(pid int) []string {
	fds, _ := os.ReadDir(filepath.Join("/proc", strconv.Itoa(pid), "fd"))
	inodes := make(map[string]bool)
	for _, fd := range fds {
		link, err := os.Readlink(filepath.Join("/proc", strconv.Itoa(pid), "fd", fd.Name()))
		if inode, ok := strings.CutPrefix(link, "socket:["); err == nil && ok {
			inodes[strings.TrimSuffix(inode, "]")] = true
		}
	}
	table, _ := os.ReadFile("/proc/net/unix")
	var paths []string
	for line := range strings.Lines(string(table)) {
		// Num RefCount Protocol Flags Type St Inode Path
		f := strings.Fields(line)
		if len(f) == 8 && inodes[f[6]] && strings.HasPrefix(f[7], "/") {
			paths = append(paths, f[7])
		}
	}
	return paths
}

// dirSize returns the size of the files under dir.
func dirSize(t testing.TB, dir string) int64 {
	t.Helper()
	var size int64
	filepath.WalkDir(dir, func(_ string, d os.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			if info, err := d.Info(); err == nil {
				size += info.Size()
			}
		}
		return nil
	})
	return size
}
