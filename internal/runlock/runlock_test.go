package runlock

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// holdEnv makes the test binary a helper process that holds a lock file
// (dir and name separated by a newline) until its stdin closes.
const holdEnv = "RUNLOCK_TEST_HOLD"

func TestMain(m *testing.M) {
	if v := os.Getenv(holdEnv); v != "" {
		dir, name, _ := strings.Cut(v, "\n")
		release, err := Hold(dir, name)
		if err != nil {
			os.Stderr.WriteString(err.Error() + "\n")
			os.Exit(1)
		}
		os.Stdout.WriteString("held\n")
		_, _ = bufio.NewReader(os.Stdin).ReadString('\n')
		release()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// holder starts a helper process holding a lock file of name in dir, and
// returns it once it holds the lock. Closing stdin lets it release.
func holder(t *testing.T, dir, name string) (*exec.Cmd, func()) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), holdEnv+"="+dir+"\n"+name)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	if line, err := bufio.NewReader(stdout).ReadString('\n'); err != nil || line != "held\n" {
		t.Fatalf("helper: %q, %v", line, err)
	}
	return cmd, func() { stdin.Close(); _ = cmd.Wait() }
}

// Processes that hold a lock of a name are listed by their ids, in order,
// while they run: this one and another. Releasing, or the other process
// ending, takes each off the list.
func TestRunningListsTheProcessesThatHold(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "mailbox", "key")
	if got, err := Running(dir, "s1"); err != nil || len(got) != 0 {
		t.Fatalf("before anything: %v, %v", got, err)
	}
	release, err := Hold(dir, "s1")
	if err != nil {
		t.Fatal(err)
	}
	other, stop := holder(t, dir, "s1")
	want := []int{os.Getpid(), other.Process.Pid}
	slices.Sort(want)
	if got, err := Running(dir, "s1"); err != nil || !slices.Equal(got, want) {
		t.Errorf("Running = %v, %v; want %v", got, err, want)
	}
	if got, err := Running(dir, "s2"); err != nil || len(got) != 0 {
		t.Errorf("another session: %v, %v; want none", got, err)
	}
	stop()
	if got, err := Running(dir, "s1"); err != nil || !slices.Equal(got, []int{os.Getpid()}) {
		t.Errorf("after the other released: %v, %v; want only %d", got, err, os.Getpid())
	}
	release()
	if got, err := Running(dir, "s1"); err != nil || len(got) != 0 {
		t.Errorf("after releasing: %v, %v; want none", got, err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("files left: %v", entries)
	}
}

// A process killed while it holds its lock leaves the file, which is not
// counted as running, and the next Hold of the name removes.
func TestAKilledProcessIsNotRunning(t *testing.T) {
	dir := t.TempDir()
	other, _ := holder(t, dir, "s1")
	if err := other.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = other.Wait()
	stale := filepath.Join(dir, "s1.run-"+strconv.Itoa(other.Process.Pid))
	if _, err := os.Stat(stale); err != nil {
		t.Fatalf("the killed process left no file: %v", err)
	}
	if got, err := Running(dir, "s1"); err != nil || len(got) != 0 {
		t.Errorf("Running = %v, %v; want none", got, err)
	}
	release, err := Hold(dir, "s1")
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	if _, err := os.Stat(stale); !os.IsNotExist(err) {
		t.Errorf("the stale file is still there: %v", err)
	}
}

// Only files named NAME.run-DIGITS count, so that one session's name
// that starts like another's, or other files of the session, are not
// taken for its lock files.
func TestLockFileNames(t *testing.T) {
	for _, tc := range []struct {
		file, name string
		pid        int
		ok         bool
	}{
		{"s1.run-123", "s1", 123, true},
		{"s1.run-", "s1", 0, false},
		{"s1.run-12a", "s1", 0, false},
		{"s1.run-5.json", "s1", 0, false},
		{"s1.run-5.run-77", "s1", 0, false},
		{"s1.run-5.run-77", "s1.run-5", 77, true},
		{"s10.run-5", "s1", 0, false},
		{"s1.json", "s1", 0, false},
		{"s1.run-0", "s1", 0, false},
	} {
		if pid, ok := pidOf(tc.file, tc.name); pid != tc.pid || ok != tc.ok {
			t.Errorf("pidOf(%q, %q) = %d, %v; want %d, %v", tc.file, tc.name, pid, ok, tc.pid, tc.ok)
		}
	}
}

// Held creates nothing: a missing file is not held and stays missing.
func TestHeldCreatesNothing(t *testing.T) {
	path := filepath.Join(t.TempDir(), "none.lock")
	if held, err := Held(path); err != nil || held {
		t.Errorf("Held = %v, %v", held, err)
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Errorf("Held created the file: %v", err)
	}
}

// A process holds its lock file once however often it calls Hold: it
// stays listed, once, until the last release.
func TestHoldTwiceInOneProcess(t *testing.T) {
	dir := t.TempDir()
	r1, err := Hold(dir, "s1")
	if err != nil {
		t.Fatal(err)
	}
	r2, err := Hold(dir, "s1")
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := Running(dir, "s1"); !slices.Equal(got, []int{os.Getpid()}) {
		t.Errorf("Running = %v, want this process once", got)
	}
	r1()
	r1() // a second call of one release changes nothing
	if got, _ := Running(dir, "s1"); !slices.Equal(got, []int{os.Getpid()}) {
		t.Errorf("after one release: %v, want this process", got)
	}
	r2()
	if got, _ := Running(dir, "s1"); len(got) != 0 {
		t.Errorf("after both: %v, want none", got)
	}
}
