package hostile

// A real interlink-bus process for the tests that attack the bus: built by
// the go command, started on 127.0.0.1 with a free port, killed at cleanup,
// with its memory read from /proc.

import (
	"bufio"
	"os"
	"os/exec"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/interlink-go/interlink/internal/testutil"
)

// busProcess is a running interlink-bus.
type busProcess struct {
	cmd  *exec.Cmd
	logs *testutil.LockedBuffer
	done chan struct{}
	base string // http://127.0.0.1:PORT
}

var busListening = regexp.MustCompile(`msg="bus listening" addr=(\S+)`)

// startBusProcess starts interlink-bus on a free loopback port with extra
// arguments and waits until it listens. It is killed at cleanup.
func startBusProcess(tb testing.TB, args ...string) *busProcess {
	tb.Helper()
	return startBusArgv(tb, append([]string{testutil.BuildBus(tb), "--addr", "127.0.0.1:0"}, args...))
}

// startBusArgv runs the command argv, which starts interlink-bus on a
// free loopback port (or execs it so), and waits until the bus listens.
// It is killed at cleanup.
func startBusArgv(tb testing.TB, argv []string) *busProcess {
	tb.Helper()
	p := &busProcess{logs: &testutil.LockedBuffer{}, done: make(chan struct{})}
	p.cmd = exec.Command(argv[0], argv[1:]...)
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "INTERLINK_") {
			p.cmd.Env = append(p.cmd.Env, kv)
		}
	}
	p.cmd.Stdout, p.cmd.Stderr = p.logs, p.logs
	if err := p.cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	go func() {
		p.cmd.Wait()
		close(p.done)
	}()
	tb.Cleanup(func() {
		p.cmd.Process.Kill()
		<-p.done
		if tb.Failed() {
			tb.Logf("interlink-bus output:\n%s", p.logs.String())
		}
	})
	testutil.Eventually(tb, 10*time.Second, "interlink-bus to listen", func() bool {
		select {
		case <-p.done:
			tb.Fatalf("interlink-bus exited before listening:\n%s", p.logs.String())
		default:
		}
		m := busListening.FindStringSubmatch(p.logs.String())
		if m != nil {
			p.base = "http://" + m[1]
		}
		return m != nil
	})
	return p
}

// memory returns the bus's resident memory now (VmRSS) and at its peak so
// far (VmHWM), in bytes. Tests that measure skip where /proc has neither.
func (p *busProcess) memory(tb testing.TB) (rss, peak int64) {
	tb.Helper()
	if runtime.GOOS != "linux" {
		tb.Skip("process memory is read from /proc, which only Linux has")
	}
	f, err := os.Open("/proc/" + strconv.Itoa(p.cmd.Process.Pid) + "/status")
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		for name, dst := range map[string]*int64{"VmRSS:": &rss, "VmHWM:": &peak} {
			if rest, ok := strings.CutPrefix(sc.Text(), name); ok {
				kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
				if err != nil {
					tb.Fatalf("%s %q: %v", name, rest, err)
				}
				*dst = kb << 10
			}
		}
	}
	if rss == 0 || peak == 0 {
		tb.Fatalf("no VmRSS or VmHWM in /proc/%d/status", p.cmd.Process.Pid)
	}
	return rss, peak
}

// mib formats a byte count in MiB.
func mib(n int64) string { return strconv.FormatFloat(float64(n)/(1<<20), 'f', 1, 64) + " MiB" }
