package main

import (
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/interlink-go/interlink/internal/store/bolt"
	"github.com/interlink-go/interlink/internal/testutil"
)

// With port 0 the log names the port actually bound, and the bus
// answers there.
func TestListeningLogsBoundAddress(t *testing.T) {
	t.Parallel()
	p := startBus(t, busEnv(), "--addr", "127.0.0.1:0")
	m := listeningRE.FindStringSubmatch(p.logs.String())
	if strings.HasSuffix(m[1], ":0") || !strings.HasPrefix(m[1], "127.0.0.1:") {
		t.Errorf("logged addr %q, want 127.0.0.1 with the bound port", m[1])
	}
	if m[2] != "1024" {
		t.Errorf("logged cap %s, want the default 1024", m[2])
	}
	code, body := get(t, p.base, "/healthz")
	if code != http.StatusOK || strings.TrimSpace(body) != `{"status":"ok"}` {
		t.Errorf("/healthz = %d %s", code, body)
	}
	logs := p.logs.String()
	if len(logLines(logs, "in-memory queue, lost on restart")) != 1 {
		t.Errorf("no in-memory warning in:\n%s", logs)
	}
	if strings.Contains(logs, "not bound to loopback") {
		t.Errorf("loopback bind warned about exposure:\n%s", logs)
	}
	p.stop(t)
}

// A bind outside loopback warns what anyone reaching the port can do;
// loopback binds, IPv4 and IPv6, do not.
func TestNonLoopbackWarning(t *testing.T) {
	t.Parallel()
	tests := []struct {
		addr string
		warn bool
	}{
		{"0.0.0.0:0", true},
		{"127.0.0.1:0", false},
		{"127.0.0.2:0", false},
		{"[::1]:0", false},
	}
	for _, tt := range tests {
		t.Run(tt.addr, func(t *testing.T) {
			t.Parallel()
			if strings.Contains(tt.addr, "::1") {
				ln, err := net.Listen("tcp", tt.addr)
				if err != nil {
					t.Skipf("no IPv6 loopback here: %v", err)
				}
				ln.Close()
			}
			p := startBus(t, busEnv(), "--addr", tt.addr)
			warned := logLines(p.logs.String(), "not bound to loopback: any host that can reach this port can read, acknowledge and flood queues")
			if (len(warned) == 1) != tt.warn {
				t.Errorf("warning lines %q, want warning %v", warned, tt.warn)
			}
			if tt.warn && !strings.Contains(warned[0], "level=WARN") {
				t.Errorf("warning logged as %q", warned[0])
			}
			// Reach it over loopback whatever the bind address.
			_, port, _ := net.SplitHostPort(strings.TrimPrefix(p.base, "http://"))
			host := "127.0.0.1"
			if strings.Contains(tt.addr, "::1") {
				host = "[::1]"
			} else if strings.HasPrefix(tt.addr, "127.0.0.2") {
				host = "127.0.0.2"
			}
			if code, _ := get(t, "http://"+host+":"+port, "/healthz"); code != http.StatusOK {
				t.Errorf("/healthz status %d", code)
			}
			p.stop(t)
		})
	}
}

// SIGTERM ends parked long-polls, closes the database and exits 0
// promptly; the file then opens at once, with the queued messages in it.
func TestSIGTERMClosesDatabase(t *testing.T) {
	t.Parallel()
	db := filepath.Join(t.TempDir(), "bus.db")
	p := startBus(t, busEnv(), "--addr", "127.0.0.1:0", "--db", db)
	send(t, p.base, "A", "one")
	send(t, p.base, "A", "two")

	// A poll parked for a minute must not hold the shutdown.
	polled := make(chan int, 1)
	go func() {
		resp, err := httpc.Get(p.base + "/recv?me=idle&timeout_ms=60000")
		if err != nil {
			polled <- -1
			return
		}
		resp.Body.Close()
		polled <- resp.StatusCode
	}()
	testutil.Eventually(t, 5*time.Second, "the poll to park", func() bool { return parkedPolls(t, p.base) == 1 })

	start := time.Now()
	p.stop(t)
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("shutdown took %v with a parked poll", d)
	}
	select {
	case code := <-polled:
		t.Logf("parked poll ended with %d", code)
	case <-time.After(5 * time.Second):
		t.Error("parked poll still open after the bus exited")
	}
	if len(logLines(p.logs.String(), "bus stopped")) != 1 {
		t.Errorf("no stop line in:\n%s", p.logs.String())
	}

	st, err := bolt.Open(db, nil)
	if err != nil {
		t.Fatalf("reopening the database: %v", err)
	}
	defer st.Close()
	if n, err := st.Depth("A"); n != 2 || err != nil {
		t.Errorf("depth of A after restart = %d, %v; want 2", n, err)
	}
}

// Every setting can come from its environment variable.
func TestEnvironment(t *testing.T) {
	t.Parallel()
	db := filepath.Join(t.TempDir(), "env.db")
	p := startBus(t, busEnv(
		"INTERLINK_ADDR=127.0.0.1:0",
		"INTERLINK_DB="+db,
		"INTERLINK_QUEUE_CAP=1",
		"INTERLINK_LOG_LEVEL=debug",
	))
	logs := p.logs.String()
	if m := listeningRE.FindStringSubmatch(logs); m[2] != "1" {
		t.Errorf("logged cap %s, want 1", m[2])
	}
	if lines := logLines(logs, "durable queue"); len(lines) != 1 || !strings.Contains(lines[0], "db="+db) {
		t.Errorf("durable queue lines %q, want one naming %s", lines, db)
	}
	if !strings.Contains(logs, "level=DEBUG") {
		t.Errorf("INTERLINK_LOG_LEVEL=debug logged no debug line:\n%s", logs)
	}
	if _, err := os.Stat(db); err != nil {
		t.Errorf("INTERLINK_DB file: %v", err)
	}
	p.stop(t)

	// The default level hides debug lines; an empty variable counts as
	// unset.
	p = startBus(t, busEnv("INTERLINK_ADDR=127.0.0.1:0", "INTERLINK_LOG_LEVEL=", "INTERLINK_DB="))
	if logs := p.logs.String(); strings.Contains(logs, "level=DEBUG") || len(logLines(logs, "in-memory queue, lost on restart")) != 1 {
		t.Errorf("empty variables not treated as unset:\n%s", logs)
	}
	p.stop(t)
}

// The queue cap comes from the flag, else the variable, else 1024, and
// 0 behaves as 1. Four sends to one route leave the newest cap of them.
func TestQueueCap(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		args []string
		env  []string
		cap  int
	}{
		{"flag", []string{"--queue-cap", "2"}, nil, 2},
		{"env", nil, []string{"INTERLINK_QUEUE_CAP=3"}, 3},
		{"flag beats env", []string{"--queue-cap=2"}, []string{"INTERLINK_QUEUE_CAP=1"}, 2},
		{"flag 0 is 1", []string{"--queue-cap", "0"}, nil, 1},
		{"env 0 is 1", nil, []string{"INTERLINK_QUEUE_CAP=0"}, 1},
		{"empty flag falls back to env", []string{"--queue-cap="}, []string{"INTERLINK_QUEUE_CAP=3"}, 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p := startBus(t, busEnv(tt.env...), append([]string{"--addr", "127.0.0.1:0"}, tt.args...)...)
			if m := listeningRE.FindStringSubmatch(p.logs.String()); m[2] != strconv.Itoa(tt.cap) {
				t.Errorf("logged cap %s, want %d", m[2], tt.cap)
			}
			for i := range 4 {
				send(t, p.base, "R", i)
			}
			var want []string
			for i := 4 - tt.cap; i < 4; i++ {
				want = append(want, strconv.Itoa(i))
			}
			if got := drain(t, p.base, "R"); !slices.Equal(got, want) {
				t.Errorf("queue after 4 sends = %v, want %v", got, want)
			}
			p.stop(t)
		})
	}
}

// A bus killed with SIGKILL in the middle of a burst of concurrent
// sends loses none that it answered 202, and its file opens again.
func TestKillDuringSendBurst(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("a second of sends and a full drain")
	}
	db := filepath.Join(t.TempDir(), "crash.db")
	// A cap above anything the burst reaches, so nothing is evicted.
	p := startBus(t, busEnv(), "--addr", "127.0.0.1:0", "--db", db, "--queue-cap", "1000000")

	// The kill comes after a second, or earlier once killAfter sends were
	// accepted, which bounds the drain afterwards on a machine with fast
	// fsync.
	const senders, killAfter = 8, 1200
	accepted := make([][]int, senders) // per sender, in order
	var (
		stop  atomic.Bool
		count atomic.Int64
		wg    sync.WaitGroup
	)
	client := &http.Client{Timeout: 2 * time.Second}
	for i := range senders {
		wg.Go(func() {
			route := fmt.Sprintf("crash-%d", i)
			for j := 0; !stop.Load(); j++ {
				body := fmt.Sprintf(`{"to":%q,"payload":"%d-%d"}`, route, i, j)
				resp, err := client.Post(p.base+"/send", "application/json", strings.NewReader(body))
				if err != nil {
					return // the bus is gone
				}
				resp.Body.Close()
				if resp.StatusCode == http.StatusAccepted {
					accepted[i] = append(accepted[i], j)
					count.Add(1)
				}
			}
		})
	}
	// Reaching killAfter is not a failure: the kill comes then at the latest.
	testutil.Poll(time.Second, func() bool { return count.Load() >= killAfter })
	if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	p.wait(t, 5*time.Second)
	stop.Store(true)
	wg.Wait()

	total := 0
	for _, a := range accepted {
		total += len(a)
	}
	if total == 0 {
		t.Fatal("no send was accepted before the kill")
	}

	p = startBus(t, busEnv(), "--addr", "127.0.0.1:0", "--db", db)
	var mu sync.Mutex
	found := 0
	for i := range senders {
		wg.Go(func() {
			route := fmt.Sprintf("crash-%d", i)
			got := drain(t, p.base, route)
			// Every entry is whole and in order: the sends of one
			// sender were sequential.
			var seqs []int
			for _, payload := range got {
				var a, b int
				if _, err := fmt.Sscanf(payload, `"%d-%d"`, &a, &b); err != nil || a != i {
					t.Errorf("route %s: unexpected payload %s", route, payload)
					continue
				}
				seqs = append(seqs, b)
			}
			if !slices.IsSorted(seqs) {
				t.Errorf("route %s: out of order: %v", route, seqs)
			}
			for _, j := range accepted[i] {
				if _, ok := slices.BinarySearch(seqs, j); !ok {
					t.Errorf("route %s: accepted send %d is missing", route, j)
				}
			}
			mu.Lock()
			found += len(seqs)
			mu.Unlock()
		})
	}
	wg.Wait()
	t.Logf("%d sends accepted before the kill, %d messages found after it", total, found)
	p.stop(t)
}

// A second bus on the same file gives up quickly with a clear message,
// and the first one is unaffected.
func TestSecondBusOnSameFile(t *testing.T) {
	t.Parallel()
	db := filepath.Join(t.TempDir(), "shared.db")
	first := startBus(t, busEnv(), "--addr", "127.0.0.1:0", "--db", db)

	// The second bus gives up once its wait for the file's lock times out,
	// rather than waiting for the first to end; the limit here only stops
	// a hung test.
	second := launch(t, busEnv(), "--addr", "127.0.0.1:0", "--db", db)
	if code := second.wait(t, 15*time.Second); code != 1 {
		t.Errorf("second bus exited with %d, want 1", code)
	}
	out := second.logs.String()
	if !strings.Contains(out, "interlink-bus: database "+db+" is in use by another process\n") {
		t.Errorf("second bus said:\n%s", out)
	}
	if strings.Contains(out, "bus listening") {
		t.Errorf("second bus listened:\n%s", out)
	}
	if code, _ := get(t, first.base, "/healthz"); code != http.StatusOK {
		t.Errorf("first bus /healthz: %d", code)
	}
	first.stop(t)
}

// A missing folder is an error; a missing file is created, mode 0600.
func TestDatabaseLocation(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	missing := filepath.Join(dir, "no", "such", "bus.db")
	p := launch(t, busEnv(), "--addr", "127.0.0.1:0", "--db", missing)
	if code := p.wait(t, 5*time.Second); code != 1 {
		t.Errorf("missing folder: exit %d, want 1", code)
	}
	if out := p.logs.String(); !strings.Contains(out, "interlink-bus: cannot open database "+missing+": folder "+filepath.Dir(missing)+" does not exist\n") {
		t.Errorf("missing folder said:\n%s", out)
	}
	if _, err := os.Stat(filepath.Join(dir, "no")); !os.IsNotExist(err) {
		t.Errorf("the bus created folders: %v", err)
	}

	fresh := filepath.Join(dir, "fresh.db")
	p = startBus(t, busEnv(), "--addr", "127.0.0.1:0", "--db", fresh)
	fi, err := os.Stat(fresh)
	if err != nil {
		t.Fatalf("missing file not created: %v", err)
	}
	if mode := fi.Mode().Perm(); mode != 0o600 {
		t.Errorf("database mode %v, want 0600", mode)
	}
	p.stop(t)
}

// Without --db nothing survives a restart; with it the queues
// survive but the roster, which lives in memory, starts empty.
func TestRestart(t *testing.T) {
	t.Parallel()
	announce := map[string]any{"pubkey": "K", "session": map[string]string{"session_id": "s1"}}
	tests := []struct {
		name     string
		args     []string
		keepsMsg bool
	}{
		{"memory", nil, false},
		{"bolt", []string{"--db", filepath.Join(t.TempDir(), "restart.db")}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			args := append([]string{"--addr", "127.0.0.1:0"}, tt.args...)
			p := startBus(t, busEnv(), args...)
			send(t, p.base, "K#s1", "kept?")
			if code := post(t, p.base, "/announce", announce); code != http.StatusAccepted {
				t.Fatalf("announce: %d", code)
			}
			if _, body := get(t, p.base, "/roster"); !strings.Contains(body, `"pubkey":"K"`) {
				t.Fatalf("roster before restart: %s", body)
			}
			p.stop(t)

			p = startBus(t, busEnv(), args...)
			if _, body := get(t, p.base, "/roster"); strings.TrimSpace(body) != `{"roster":[]}` {
				t.Errorf("roster after restart: %s", body)
			}
			got := drain(t, p.base, "K#s1")
			if tt.keepsMsg && !slices.Equal(got, []string{`"kept?"`}) {
				t.Errorf("queue after restart = %v, want the message", got)
			}
			if !tt.keepsMsg && len(got) != 0 {
				t.Errorf("in-memory queue survived a restart: %v", got)
			}
			p.stop(t)
		})
	}
}
