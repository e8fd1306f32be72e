package statefile

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gofrs/flock"
)

// The test binary doubles as a helper process: when childModeEnv is set,
// TestMain runs the named child routine instead of the tests.
const (
	childModeEnv   = "STATEFILE_TEST_CHILD"
	childPathEnv   = "STATEFILE_TEST_PATH"
	childRoundsEnv = "STATEFILE_TEST_ROUNDS"

	crashExitCode = 3
)

func TestMain(m *testing.M) {
	switch mode := os.Getenv(childModeEnv); mode {
	case "":
		os.Exit(m.Run())
	case "crash":
		crashChild(os.Getenv(childPathEnv))
	case "count":
		countChild(os.Getenv(childPathEnv), os.Getenv(childRoundsEnv))
	default:
		fmt.Fprintf(os.Stderr, "unknown child mode %q\n", mode)
		os.Exit(2)
	}
}

// crashChild dies the moment WriteAtomic is about to rename its temp file,
// without running any deferred cleanup, as a killed process would.
func crashChild(path string) {
	beforeRename = func(string) { os.Exit(crashExitCode) }
	err := WriteAtomic(path, []byte("new contents"))
	fmt.Fprintf(os.Stderr, "WriteAtomic returned without crashing: %v\n", err)
	os.Exit(1)
}

// countChild increments the counter at path the given number of times.
func countChild(path, rounds string) {
	n, err := strconv.Atoi(rounds)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	for range n {
		if err := increment(path); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	}
	os.Exit(0)
}

// increment adds one to the decimal counter stored at path.
func increment(path string) error {
	return Update(path, LockPath(path, "lock"), func(data []byte, exists bool) ([]byte, error) {
		n := 0
		if exists {
			var err error
			if n, err = strconv.Atoi(string(data)); err != nil {
				return nil, err
			}
		}
		return []byte(strconv.Itoa(n + 1)), nil
	})
}

// childCommand returns a command that re-runs this test binary in the given
// child mode.
func childCommand(t testing.TB, testName, mode, path string, env ...string) *exec.Cmd {
	t.Helper()
	switch runtime.GOOS {
	case "js", "wasip1", "ios":
		t.Skipf("cannot start a child process on %s", runtime.GOOS)
	}
	cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run=^"+testName+"$", "-test.count=1")
	cmd.Env = append(os.Environ(), childModeEnv+"="+mode, childPathEnv+"="+path)
	cmd.Env = append(cmd.Env, env...)
	return cmd
}

func writeFile(t testing.TB, path string, data []byte, perm fs.FileMode) {
	t.Helper()
	if err := os.WriteFile(path, data, perm); err != nil {
		t.Fatal(err)
	}
	// WriteFile's mode is filtered by the umask; set it exactly.
	if err := os.Chmod(path, perm); err != nil {
		t.Fatal(err)
	}
}

func readFile(t testing.TB, path string) []byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func skipModesOnWindows(t testing.TB) {
	t.Helper()
	if runtime.GOOS == "windows" {
		t.Skip("Unix permission bits are not kept on Windows")
	}
}

// tempFiles lists the names in dir that look like WriteAtomic temp files.
func tempFiles(t testing.TB, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".") && strings.Contains(e.Name(), ".tmp") {
			names = append(names, e.Name())
		}
	}
	return names
}

func TestWriteAtomicNewFileMode(t *testing.T) {
	skipModesOnWindows(t)
	tests := []struct {
		name          string
		rel           string // path below the temp dir
		createsParent bool
	}{
		{"existing parent", "state.json", false},
		{"missing parent", "a/state.json", true},
		{"missing parents", "a/b/c/state.json", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), filepath.FromSlash(tt.rel))
			if err := WriteAtomic(path, []byte("{}\n")); err != nil {
				t.Fatal(err)
			}
			fi, err := os.Stat(path)
			if err != nil {
				t.Fatal(err)
			}
			if got := fi.Mode(); got != 0o600 {
				t.Errorf("mode = %v, want %v", got, fs.FileMode(0o600))
			}
			di, err := os.Stat(filepath.Dir(path))
			if err != nil {
				t.Fatal(err)
			}
			if !di.IsDir() {
				t.Errorf("parent %s is not a directory", filepath.Dir(path))
			}
			if got := di.Mode().Perm(); tt.createsParent && got&^0o700 != 0 {
				t.Errorf("parent mode = %v, want no group or other bits", got)
			}
			if got := readFile(t, path); string(got) != "{}\n" {
				t.Errorf("contents = %q, want %q", got, "{}\n")
			}
		})
	}
}

func TestWriteAtomicKeepsMode(t *testing.T) {
	skipModesOnWindows(t)
	tests := []struct {
		name string
		perm fs.FileMode
	}{
		{"world readable", 0o644},
		{"group readable", 0o640},
		{"private", 0o600},
		{"read only", 0o400},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "peers.json")
			writeFile(t, path, []byte("old"), tt.perm)
			if err := WriteAtomic(path, []byte("new")); err != nil {
				t.Fatal(err)
			}
			fi, err := os.Stat(path)
			if err != nil {
				t.Fatal(err)
			}
			if got := fi.Mode(); got != tt.perm {
				t.Errorf("mode = %v, want %v", got, tt.perm)
			}
			if got := readFile(t, path); string(got) != "new" {
				t.Errorf("contents = %q, want %q", got, "new")
			}
		})
	}
}

func TestWriteAtomicNoTempLeft(t *testing.T) {
	tests := []struct {
		name    string
		setup   func(t *testing.T, path string)
		wantErr bool
	}{
		{
			name:  "new file",
			setup: func(*testing.T, string) {},
		},
		{
			name: "replace existing",
			setup: func(t *testing.T, path string) {
				writeFile(t, path, []byte("old"), 0o600)
			},
		},
		{
			name: "rename fails",
			setup: func(t *testing.T, path string) {
				// A non-empty directory cannot be replaced by a file.
				if err := os.MkdirAll(filepath.Join(path, "sub"), 0o700); err != nil {
					t.Fatal(err)
				}
			},
			wantErr: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "state.json")
			tt.setup(t, path)
			for i := range 3 {
				err := WriteAtomic(path, []byte(strconv.Itoa(i)))
				if gotErr := err != nil; gotErr != tt.wantErr {
					t.Fatalf("WriteAtomic error = %v, want error %v", err, tt.wantErr)
				}
				if err != nil && !strings.HasPrefix(err.Error(), "statefile: write "+path+": ") {
					t.Errorf("error %q lacks the statefile context", err)
				}
			}
			if left := tempFiles(t, dir); len(left) != 0 {
				t.Errorf("temp files left behind: %q", left)
			}
		})
	}
}

func TestCrashBeforeRenameKeepsOldFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "state.json")
	old := []byte(`{"old":true}` + "\n")
	writeFile(t, path, old, 0o600)

	cmd := childCommand(t, "TestCrashBeforeRenameKeepsOldFile", "crash", path)
	out, err := cmd.CombinedOutput()
	var exitErr *exec.ExitError
	if !errors.As(err, &exitErr) || exitErr.ExitCode() != crashExitCode {
		t.Fatalf("child: err = %v, want exit code %d; output:\n%s", err, crashExitCode, out)
	}

	if got := readFile(t, path); !bytes.Equal(got, old) {
		t.Fatalf("after crash, contents = %q, want the old %q", got, old)
	}
	left := tempFiles(t, dir)
	for _, name := range left {
		// The crash came after the temp file was complete; it just never
		// got its final name.
		if got := readFile(t, filepath.Join(dir, name)); string(got) != "new contents" {
			t.Errorf("leftover %s = %q, want %q", name, got, "new contents")
		}
	}

	// A leftover temp file must not get in the way of later writers or
	// readers.
	if err := WriteAtomic(path, []byte("after")); err != nil {
		t.Fatal(err)
	}
	if err := increment(filepath.Join(dir, "counter")); err != nil {
		t.Fatal(err)
	}
	got, exists, err := Read(path)
	if err != nil || !exists || string(got) != "after" {
		t.Errorf("Read = %q, %v, %v; want %q, true, nil", got, exists, err, "after")
	}
	for _, name := range left {
		if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
			t.Errorf("leftover %s: %v", name, err)
		}
	}
}

func TestUpdate(t *testing.T) {
	tests := []struct {
		name       string
		initial    []byte // nil means no file
		result     []byte // what fn returns
		wantExists bool
		want       []byte // nil means no file afterwards
	}{
		{"create missing file", nil, []byte("1"), false, []byte("1")},
		{"replace existing file", []byte("1"), []byte("2"), true, []byte("2")},
		{"nil result keeps file", []byte("1"), nil, true, []byte("1")},
		{"nil result creates nothing", nil, nil, false, nil},
		{"empty result empties file", []byte("1"), []byte{}, true, []byte{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "state.json")
			if tt.initial != nil {
				writeFile(t, path, tt.initial, 0o600)
			}
			calls := 0
			err := Update(path, LockPath(path, "lock"), func(data []byte, exists bool) ([]byte, error) {
				calls++
				if exists != tt.wantExists {
					t.Errorf("fn got exists = %v, want %v", exists, tt.wantExists)
				}
				if !bytes.Equal(data, tt.initial) || (data == nil) != (tt.initial == nil) {
					t.Errorf("fn got data = %q, want %q", data, tt.initial)
				}
				return tt.result, nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if calls != 1 {
				t.Errorf("fn called %d times, want 1", calls)
			}
			got, exists, err := Read(path)
			if err != nil {
				t.Fatal(err)
			}
			if exists != (tt.want != nil) || !bytes.Equal(got, tt.want) {
				t.Errorf("file = %q (exists %v), want %q (exists %v)", got, exists, tt.want, tt.want != nil)
			}
		})
	}
}

func TestUpdateFnErrorLeavesFile(t *testing.T) {
	errRefused := errors.New("refused")
	tests := []struct {
		name    string
		initial []byte // nil means no file
		fnErr   error
	}{
		{"existing file", []byte("{\"a\":1}\n"), errRefused},
		{"missing file", nil, errRefused},
		{"wrapped sentinel", []byte("x"), fmt.Errorf("add peer: %w", errRefused)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "peers.json")
			if tt.initial != nil {
				writeFile(t, path, tt.initial, 0o600)
			}
			err := Update(path, LockPath(path, "json.lock"), func([]byte, bool) ([]byte, error) {
				return []byte("must not be written"), tt.fnErr
			})
			if !errors.Is(err, errRefused) {
				t.Fatalf("Update error = %v, want one matching %v", err, errRefused)
			}
			got, exists, rerr := Read(path)
			if rerr != nil {
				t.Fatal(rerr)
			}
			if exists != (tt.initial != nil) || !bytes.Equal(got, tt.initial) {
				t.Errorf("file = %q (exists %v), want %q unchanged", got, exists, tt.initial)
			}
			if left := tempFiles(t, dir); len(left) != 0 {
				t.Errorf("temp files left behind: %q", left)
			}
		})
	}
}

func TestUpdateLockPathIsDirectory(t *testing.T) {
	tests := []struct {
		name  string
		setup func(t *testing.T, dir string) (lockPath string)
	}{
		{
			name: "lock path is a directory",
			setup: func(t *testing.T, dir string) string {
				lockPath := filepath.Join(dir, "state.lock")
				if err := os.Mkdir(lockPath, 0o700); err != nil {
					t.Fatal(err)
				}
				return lockPath
			},
		},
		{
			name: "lock folder is a file",
			setup: func(t *testing.T, dir string) string {
				parent := filepath.Join(dir, "locks")
				writeFile(t, parent, nil, 0o600)
				return filepath.Join(parent, "state.lock")
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "state.json")
			old := []byte("old")
			writeFile(t, path, old, 0o600)
			lockPath := tt.setup(t, dir)

			called := false
			err := Update(path, lockPath, func([]byte, bool) ([]byte, error) {
				called = true
				return []byte("new"), nil
			})
			if !errors.Is(err, ErrLock) {
				t.Errorf("Update error = %v, want one matching ErrLock", err)
			}
			if called {
				t.Error("fn was called without the lock")
			}
			if got := readFile(t, path); !bytes.Equal(got, old) {
				t.Errorf("file = %q, want %q unchanged", got, old)
			}
		})
	}
}

func TestUpdateKeepsLockFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "peers.json")
	lockPath := LockPath(path, "json.lock")
	// Another implementation may have left bytes in the lock file; taking
	// the lock must neither truncate nor remove it.
	writeFile(t, lockPath, []byte("pid 42\n"), 0o600)
	for range 2 {
		if err := Update(path, lockPath, func([]byte, bool) ([]byte, error) {
			return []byte("{}\n"), nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	if got := readFile(t, lockPath); string(got) != "pid 42\n" {
		t.Errorf("lock file = %q, want %q", got, "pid 42\n")
	}
}

func TestUpdateWaitsForLockHolder(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "state.json")
	lockPath := LockPath(path, "lock")

	// Hold the lock through a separate handle, as another process would.
	holder := flock.New(lockPath)
	if err := holder.Lock(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		done <- Update(path, lockPath, func([]byte, bool) ([]byte, error) {
			return []byte("written"), nil
		})
	}()

	select {
	case err := <-done:
		t.Fatalf("Update finished while the lock was held (err %v)", err)
	case <-time.After(100 * time.Millisecond):
	}
	if _, exists, _ := Read(path); exists {
		t.Fatal("file written while the lock was held")
	}
	if err := holder.Unlock(); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, path); string(got) != "written" {
		t.Errorf("file = %q, want %q", got, "written")
	}
}

func TestUpdateSerializesGoroutines(t *testing.T) {
	const goroutines, rounds = 16, 25
	path := filepath.Join(t.TempDir(), "counter")
	var wg sync.WaitGroup
	for range goroutines {
		wg.Go(func() {
			for range rounds {
				if err := increment(path); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	if got, want := string(readFile(t, path)), strconv.Itoa(goroutines*rounds); got != want {
		t.Errorf("counter = %s, want %s", got, want)
	}
}

func TestUpdateSerializesProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("starts child processes")
	}
	const processes, rounds = 4, 50
	path := filepath.Join(t.TempDir(), "counter")
	cmds := make([]*exec.Cmd, processes)
	outs := make([]bytes.Buffer, processes)
	for i := range cmds {
		cmds[i] = childCommand(t, "TestUpdateSerializesProcesses", "count", path,
			childRoundsEnv+"="+strconv.Itoa(rounds))
		cmds[i].Stdout = &outs[i]
		cmds[i].Stderr = &outs[i]
		if err := cmds[i].Start(); err != nil {
			t.Fatal(err)
		}
	}
	for i, cmd := range cmds {
		if err := cmd.Wait(); err != nil {
			t.Errorf("child %d: %v; output:\n%s", i, err, outs[i].String())
		}
	}
	if got, want := string(readFile(t, path)), strconv.Itoa(processes*rounds); got != want {
		t.Errorf("counter = %s, want %s", got, want)
	}
}

func TestLockPath(t *testing.T) {
	tests := []struct {
		name string
		path string
		ext  string
		want string
	}{
		{"peers", "/a/peers.json", "json.lock", "/a/peers.json.lock"},
		{"session state", "/a/s1.json", "lock", "/a/s1.lock"},
		{"no extension", "/a/queue", "lock", "/a/queue.lock"},
		{"only the final extension", "/a/s1.tar.gz", "lock", "/a/s1.tar.lock"},
		{"dot file", "/a/.state", "lock", "/a/.state.lock"},
		{"dot file with extension", "/a/.state.json", "lock", "/a/.state.lock"},
		{"dot in folder name", "/a.d/queue", "lock", "/a.d/queue.lock"},
		{"relative", "peers.json", "json.lock", "peers.json.lock"},
		{"other sidecar", "/a/s1.json", "notifier-lock", "/a/s1.notifier-lock"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := LockPath(tt.path, tt.ext); got != tt.want {
				t.Errorf("LockPath(%q, %q) = %q, want %q", tt.path, tt.ext, got, tt.want)
			}
		})
	}
}

func TestReadMissing(t *testing.T) {
	tests := []struct {
		name string
		rel  string
	}{
		{"missing file", "state.json"},
		{"missing folder", "none/state.json"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), filepath.FromSlash(tt.rel))
			data, exists, err := Read(path)
			if data != nil || exists || err != nil {
				t.Errorf("Read(%s) = %q, %v, %v; want nil, false, nil", tt.rel, data, exists, err)
			}
		})
	}
}

func TestRead(t *testing.T) {
	dir := t.TempDir()
	full := filepath.Join(dir, "full")
	writeFile(t, full, []byte("data"), 0o600)
	empty := filepath.Join(dir, "empty")
	writeFile(t, empty, nil, 0o600)

	tests := []struct {
		name       string
		path       string
		want       string
		wantExists bool
		wantErr    bool
	}{
		{"contents", full, "data", true, false},
		{"empty file exists", empty, "", true, false},
		{"directory is an error", dir, "", false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			data, exists, err := Read(tt.path)
			if (err != nil) != tt.wantErr {
				t.Fatalf("Read error = %v, want error %v", err, tt.wantErr)
			}
			if string(data) != tt.want || exists != tt.wantExists {
				t.Errorf("Read = %q, %v; want %q, %v", data, exists, tt.want, tt.wantExists)
			}
		})
	}
}

func TestLock(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "sub", "state.json")
	lockPath := LockPath(path, "lock")

	unlock, err := Lock(lockPath)
	if err != nil {
		t.Fatal(err)
	}
	// Another handle, as another process would use, cannot take the lock.
	other := flock.New(lockPath)
	if ok, err := other.TryLock(); err != nil || ok {
		t.Fatalf("TryLock while held = %v, %v; want false, nil", ok, err)
	}
	// Update on the same lock path waits until the holder releases it.
	done := make(chan error, 1)
	go func() {
		done <- Update(path, lockPath, func([]byte, bool) ([]byte, error) {
			return []byte("after"), nil
		})
	}()
	if err := WriteAtomic(path, []byte("held")); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		t.Fatalf("Update finished while Lock was held (err %v)", err)
	case <-time.After(100 * time.Millisecond):
	}
	if got := readFile(t, path); string(got) != "held" {
		t.Errorf("file = %q while locked, want %q", got, "held")
	}
	if err := unlock(); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, path); string(got) != "after" {
		t.Errorf("file = %q, want %q", got, "after")
	}
	if ok, err := other.TryLock(); err != nil || !ok {
		t.Fatalf("TryLock after unlock = %v, %v; want true, nil", ok, err)
	}
	if err := other.Unlock(); err != nil {
		t.Fatal(err)
	}

	// A lock path that is a directory cannot be locked.
	if _, err := Lock(dir); !errors.Is(err, ErrLock) {
		t.Errorf("Lock(directory) error = %v, want one matching ErrLock", err)
	}
}

func TestLockContextGivesUpWhenCancelled(t *testing.T) {
	for _, tc := range []struct {
		name string
		hold func(t *testing.T, lockPath string) (release func())
	}{
		{"held by this process", func(t *testing.T, lockPath string) func() {
			unlock, err := Lock(lockPath)
			if err != nil {
				t.Fatal(err)
			}
			return func() {
				if err := unlock(); err != nil {
					t.Error(err)
				}
			}
		}},
		{"held through another handle", func(t *testing.T, lockPath string) func() {
			other := flock.New(lockPath)
			if err := other.Lock(); err != nil {
				t.Fatal(err)
			}
			return func() {
				if err := other.Unlock(); err != nil {
					t.Error(err)
				}
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "state.json")
			lockPath := LockPath(path, "lock")
			release := tc.hold(t, lockPath)

			ctx, cancel := context.WithCancel(t.Context())
			done := make(chan error, 1)
			go func() {
				done <- UpdateContext(ctx, path, lockPath, func([]byte, bool) ([]byte, error) {
					return []byte("written"), nil
				})
			}()
			cancel()
			err := <-done
			if !errors.Is(err, ErrLock) || !errors.Is(err, context.Canceled) {
				t.Fatalf("UpdateContext after cancel = %v; want ErrLock and context.Canceled", err)
			}
			if _, exists, _ := Read(path); exists {
				t.Fatal("a cancelled update wrote the file")
			}

			// The abandoned wait holds nothing once the holder lets go.
			release()
			unlock, err := Lock(lockPath)
			if err != nil {
				t.Fatal(err)
			}
			if err := unlock(); err != nil {
				t.Fatal(err)
			}
			probe := flock.New(lockPath)
			got, err := probe.TryLockContext(t.Context(), time.Millisecond)
			if err != nil || !got {
				t.Fatalf("lock not free after the holder and the cancelled wait let go: %v, %v", got, err)
			}
			_ = probe.Unlock()
		})
	}
}
