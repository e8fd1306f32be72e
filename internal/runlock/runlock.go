// Package runlock marks a running process with a lock file it holds for
// as long as it runs, so that others can tell which processes run.
//
// A process calls [Hold] with a folder and a name (an interlink server:
// its session's mailbox folder and the session id); [Running] lists the
// ids of the processes holding such a lock now. The lock file is
// dir/NAME.run-PID. A process that dies leaves its file unlocked, which
// [Running] ignores and the next [Hold] for the name removes. [Held] tells
// whether any lock file is held, without taking the lock on Linux.
package runlock

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/gofrs/flock"
)

// suffix separates the name from the process id in a lock file's name.
const suffix = ".run-"

// holds counts, per lock file path, the holds of this process on it: a
// process holds its file once however often it calls Hold.
var holds struct {
	sync.Mutex
	n     map[string]int
	locks map[string]*flock.Flock
}

// Hold creates dir/NAME.run-PID for this process, with dir if missing, and
// takes an exclusive lock on it, which it keeps until release is called
// (the last release of this process removes the file). Lock files of name
// left by processes that ended are removed first.
func Hold(dir, name string) (release func(), err error) {
	path := filepath.Join(dir, name+suffix+strconv.Itoa(os.Getpid()))
	holds.Lock()
	defer holds.Unlock()
	if holds.n[path] == 0 {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return nil, fmt.Errorf("runlock: %w", err)
		}
		removeStale(dir, name)
		l := flock.New(path)
		got, err := l.TryLock()
		if err != nil {
			return nil, fmt.Errorf("runlock: %w", err)
		}
		if !got {
			return nil, fmt.Errorf("runlock: %s is held by another process", path)
		}
		if holds.n == nil {
			holds.n, holds.locks = map[string]int{}, map[string]*flock.Flock{}
		}
		holds.locks[path] = l
	}
	holds.n[path]++
	var once sync.Once
	return func() { once.Do(func() { unhold(path) }) }, nil
}

// unhold gives up one hold of path, and the lock with its file after the
// last.
func unhold(path string) {
	holds.Lock()
	defer holds.Unlock()
	if holds.n[path]--; holds.n[path] > 0 {
		return
	}
	// Unlocked first: Windows removes no file that is open.
	_ = holds.locks[path].Unlock()
	_ = os.Remove(path)
	delete(holds.n, path)
	delete(holds.locks, path)
}

// Running returns the ids of the processes that hold a lock file of name
// in dir, in increasing order. A folder that does not exist holds none.
func Running(dir, name string) ([]int, error) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("runlock: %w", err)
	}
	var pids []int
	for _, e := range entries {
		pid, ok := pidOf(e.Name(), name)
		if !ok {
			continue
		}
		held, err := Held(filepath.Join(dir, e.Name()))
		if err != nil {
			return nil, fmt.Errorf("runlock: %w", err)
		}
		if held {
			pids = append(pids, pid)
		}
	}
	slices.Sort(pids)
	return pids, nil
}

// pidOf returns the process id in file, when file is a lock file of name.
func pidOf(file, name string) (int, bool) {
	digits, ok := strings.CutPrefix(file, name+suffix)
	if !ok || digits == "" || strings.Trim(digits, "0123456789") != "" {
		return 0, false
	}
	pid, err := strconv.Atoi(digits)
	return pid, err == nil && pid > 0
}

// removeStale removes the lock files of name in dir that no process
// holds: those it can lock, of processes that ended without release.
func removeStale(dir, name string) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range entries {
		pid, ok := pidOf(e.Name(), name)
		if !ok || pid == os.Getpid() {
			continue
		}
		path := filepath.Join(dir, e.Name())
		l := flock.New(path)
		if got, err := l.TryLock(); err == nil && got {
			_ = l.Unlock()
			_ = os.Remove(path)
		}
	}
}

// Held reports whether a process holds a lock on the file at path. It
// never creates the file. On Linux it only reads the kernel's list of
// locks, so it cannot get in the way of a process taking the lock at the
// same moment; elsewhere it tries the lock and gives it back at once.
func Held(path string) (bool, error) {
	fi, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return held(path, fi)
}
