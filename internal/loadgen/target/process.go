package target

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// SettledRSS returns the resident memory of the process once it has
// stopped changing: the same in three reads 100 ms apart, or after three
// seconds.
func (p *Process) SettledRSS(ctx context.Context) int64 {
	pid := p.PID()
	last, same := readStatusKB(pid, "VmRSS:"), 0
	for deadline := time.Now().Add(3 * time.Second); same < 2 && time.Now().Before(deadline) && ctx.Err() == nil; {
		time.Sleep(100 * time.Millisecond)
		now := readStatusKB(pid, "VmRSS:")
		if now == last {
			same++
		} else {
			same = 0
		}
		last = now
	}
	return last
}

// OpenFiles returns how many files the process has open, or -1 where
// /proc cannot tell.
func (p *Process) OpenFiles() int {
	fds, err := os.ReadDir("/proc/" + strconv.Itoa(p.PID()) + "/fd")
	if err != nil {
		return -1
	}
	return len(fds)
}

// Process is an interlink-bus process started for a measurement.
type Process struct {
	// Addr is where the bus listens.
	Addr string
	cmd  *exec.Cmd
	done chan struct{}
}

var busListening = regexp.MustCompile(`msg="bus listening" addr=(\S+)`)

// StartProcess runs command (interlink-bus and its arguments) with
// --addr 127.0.0.1:0 and an environment without INTERLINK_ settings, and
// waits until it says where it listens.
func StartProcess(ctx context.Context, command []string) (*Process, error) {
	cmd := exec.Command(command[0], append(command[1:], "--addr", "127.0.0.1:0")...)
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "INTERLINK_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	out, err := cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting the bus: %v", err)
	}
	p := &Process{cmd: cmd, done: make(chan struct{})}
	found := make(chan string, 1)
	go func() {
		defer close(p.done)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if m := busListening.FindStringSubmatch(sc.Text()); m != nil {
				select {
				case found <- m[1]:
				default:
				}
			}
		}
		cmd.Wait()
	}()
	select {
	case p.Addr = <-found:
		return p, nil
	case <-p.done:
		return nil, errors.New("the bus exited before it listened")
	case <-time.After(10 * time.Second):
		p.Stop()
		return nil, errors.New("the bus did not listen within 10 s")
	case <-ctx.Done():
		p.Stop()
		return nil, ctx.Err()
	}
}

// PID returns the process id.
func (p *Process) PID() int { return p.cmd.Process.Pid }

// Stop kills the bus and waits for it.
func (p *Process) Stop() {
	p.cmd.Process.Kill()
	<-p.done
}
