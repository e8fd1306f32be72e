//go:build hosttest && linux

package hosttest

import (
	"bufio"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/interlink-go/interlink/internal/testutil"
)

// orphanEnv, when set to a folder, makes TestKilledRunLeavesNoProcessBehind
// start a bus with its home there, say so and wait to be killed: it is then
// the test run that dies.
const orphanEnv = "INTERLINK_HOSTTEST_ORPHAN"

// A test run killed from outside, as a timeout kills it, takes the
// processes it started with it: the bus it started does not outlive it.
func TestKilledRunLeavesNoProcessBehind(t *testing.T) {
	if home := os.Getenv(orphanEnv); home != "" {
		startBus(t, home)
		os.Stdout.WriteString("bus started\n")
		select {} // until killed
	}
	// The run below uses the binaries built here and a home inside this
	// test's folder, so that it leaves nothing behind when killed.
	bin := binaries(t)
	cmd := exec.Command(os.Args[0], "-test.run=^TestKilledRunLeavesNoProcessBehind$", "-test.count=1")
	cmd.Env = append(os.Environ(), orphanEnv+"="+t.TempDir(), binEnv+"="+bin)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	lines := bufio.NewScanner(out)
	for lines.Scan() && lines.Text() != "bus started" {
	}
	pid := childNamed(t, cmd.Process.Pid, "interlink-bus")
	if pid == 0 {
		t.Fatalf("the inner run started no interlink-bus (%v)", lines.Err())
	}
	t.Cleanup(func() { syscall.Kill(pid, syscall.SIGKILL) }) // should it outlive the run
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	testutil.Eventually(t, 10*time.Second, "the bus to end with the run that started it", func() bool { return !running(pid) })
}

// childNamed returns the process id of a running child of parent whose
// command is name, or 0.
func childNamed(t *testing.T, parent int, name string) int {
	t.Helper()
	dirs, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range dirs {
		pid, err := strconv.Atoi(d.Name())
		if err != nil {
			continue
		}
		comm, ppid, ok := procStat(pid)
		if ok && ppid == parent && comm == name && running(pid) {
			return pid
		}
	}
	return 0
}

// procStat returns the command name and parent process id of pid.
func procStat(pid int) (comm string, ppid int, ok bool) {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return "", 0, false
	}
	s := string(data)
	open, end := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
	if open < 0 || end < open {
		return "", 0, false
	}
	fields := strings.Fields(s[end+1:]) // state, ppid, ...
	if len(fields) < 2 {
		return "", 0, false
	}
	ppid, err = strconv.Atoi(fields[1])
	return s[open+1 : end], ppid, err == nil
}

// running reports whether process pid exists and has not exited (a
// zombie waiting to be reaped has exited).
func running(pid int) bool {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	// The state follows the command name in parentheses.
	s := string(data)
	i := strings.LastIndexByte(s, ')')
	return i >= 0 && i+2 < len(s) && s[i+2] != 'Z' && s[i+2] != 'X'
}
