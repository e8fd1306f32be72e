package policy

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/interlink-go/interlink/internal/statefile"
	"github.com/interlink-go/interlink/internal/testutil"
)

// The test binary doubles as the writer processes of
// TestConcurrentProcesses: when childEnv is set, TestMain runs a writer
// instead of the tests.
const (
	childEnv     = "POLICY_TEST_CHILD" // the writer's index
	childPathEnv = "POLICY_TEST_PATH"  // peers.json

	writers       = 8
	addsPerWriter = 50
	readPause     = 10 * time.Millisecond
)

func TestMain(m *testing.M) {
	if idx := os.Getenv(childEnv); idx != "" {
		if err := runWriter(idx, os.Getenv(childPathEnv)); err != nil {
			fmt.Fprintf(os.Stderr, "writer %s: %v\n", idx, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// writerEntry is the n-th peer that writer idx adds.
func writerEntry(idx, n int) (Entry, error) {
	k, err := seedKey(1000*(idx+1) + n)
	return Entry{Name: fmt.Sprintf("writer%d-peer%02d", idx, n), Key: k}, err
}

// runWriter waits for the end of its standard input, the signal to start,
// then adds its peers one by one.
func runWriter(idxText, path string) error {
	idx, err := strconv.Atoi(idxText)
	if err != nil {
		return err
	}
	if _, err := io.Copy(io.Discard, os.Stdin); err != nil {
		return fmt.Errorf("waiting for the start: %w", err)
	}
	s, err := Open(path)
	if err != nil {
		return err
	}
	for n := range addsPerWriter {
		e, err := writerEntry(idx, n)
		if err != nil {
			return err
		}
		if err := s.Add(e.Name, e.Key); err != nil {
			return err
		}
	}
	return nil
}

// TestConcurrentProcesses runs several processes that add peers to one
// peers.json at the same time while this process keeps reading it: every
// read must parse, the number of peers never goes down, and in the end every
// peer is present.
//
// It takes several seconds (much longer with -race on few CPUs), so -short
// skips it.
func TestConcurrentProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("starts 8 processes that write for several seconds")
	}
	path := writePeers(t, "{}")
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()

	began := time.Now()
	cmds := make([]*exec.Cmd, writers)
	outs := make([]*testutil.LockedBuffer, writers)
	starts := make([]io.Closer, writers) // closing one starts its writer
	for i := range cmds {
		cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestConcurrentProcesses$", "-test.count=1")
		cmd.Env = append(os.Environ(),
			childEnv+"="+strconv.Itoa(i), childPathEnv+"="+path)
		outs[i] = new(testutil.LockedBuffer)
		cmd.Stdout, cmd.Stderr = outs[i], outs[i]
		start, err := cmd.StdinPipe()
		if err != nil {
			t.Fatal(err)
		}
		starts[i] = start
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cmds[i] = cmd
	}
	errs := make([]error, writers)
	var wg sync.WaitGroup
	for i, cmd := range cmds {
		wg.Go(func() { errs[i] = cmd.Wait() })
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	for _, start := range starts {
		if err := start.Close(); err != nil {
			t.Fatal(err)
		}
	}

	// Reads go on, every readPause, until the writers are done, and once
	// more after.
	tick := time.NewTicker(readPause)
	defer tick.Stop()
	reads, last, bad := 0, 0, 0
	for running := true; running; {
		data, _, err := statefile.Read(path)
		if err != nil {
			t.Fatal(err)
		}
		reads++
		if p, err := Parse(data); err != nil {
			if bad++; bad <= 3 {
				t.Errorf("read %d is invalid: %v\n%q", reads, err, data)
			}
		} else {
			if p.Len() < last {
				t.Errorf("read %d has %d peers, an earlier read had %d", reads, p.Len(), last)
			}
			last = p.Len()
		}
		// Leave the CPU to the writers most of the time.
		select {
		case <-done:
			running = false
		case <-tick.C:
		}
	}
	if ctx.Err() != nil {
		t.Fatalf("writers did not finish within the time limit: %v", ctx.Err())
	}
	for i, err := range errs {
		if err != nil {
			t.Errorf("writer %d: %v\n%s", i, err, outs[i].String())
		}
	}
	if bad > 0 {
		t.Errorf("%d of %d reads were invalid", bad, reads)
	}

	p, err := Parse(readFile(t, path))
	if err != nil {
		t.Fatal(err)
	}
	if want := writers * addsPerWriter; p.Len() != want {
		t.Errorf("final policy has %d peers, want %d", p.Len(), want)
	}
	for i := range writers {
		for n := range addsPerWriter {
			e, err := writerEntry(i, n)
			if err != nil {
				t.Fatal(err)
			}
			if k, ok := p.Key(e.Name); !ok || k != e.Key {
				t.Errorf("peer %q missing or wrong: %s, %v", e.Name, k, ok)
			}
		}
	}
	t.Logf("%d writers added %d peers in %v; %d concurrent reads all parsed",
		writers, p.Len(), time.Since(began).Round(time.Millisecond), reads)
}
