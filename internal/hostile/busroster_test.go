package hostile

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/interlink-go/interlink/internal/bus"
	"github.com/interlink-go/interlink/internal/testutil"
	"github.com/interlink-go/interlink/internal/wire"
)

// junkAnnouncement returns an announcement of exactly wire.MaxAnnounceBytes
// for the n-th junk identity: it looks like a real one, but its key is
// either random bytes or a real key, and its signature is noise, so no
// agent can verify it.
func junkAnnouncement(tb testing.TB, n int) []byte {
	tb.Helper()
	raw := make([]byte, 32+64)
	rand.Read(raw)
	key := base64.RawURLEncoding.EncodeToString(raw[:32])
	if n%2 == 0 {
		key = testutil.NumberedSigner(tb, n).Public().String()
	}
	prefix := fmt.Sprintf(`{"pubkey":%q,"name":"junk-%d","session":{"session_id":"junk-%d","cwd":"/junk","git_root":"/junk","summary":"`, key, n, n)
	suffix := fmt.Sprintf(`"},"ts":%d,"sig":%q}`, time.Now().UnixMilli(), base64.RawURLEncoding.EncodeToString(raw[32:]))
	pad := wire.MaxAnnounceBytes - len(prefix) - len(suffix)
	if pad < 0 {
		tb.Fatalf("junk announcement %d is too long", n)
	}
	return []byte(prefix + strings.Repeat("j", pad) + suffix)
}

// floodRoster posts n junk announcements to the bus at base from 8
// connections and requires 202 for each.
func floodRoster(t *testing.T, base string, n int) {
	t.Helper()
	client := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 8}}
	defer client.CloseIdleConnections()
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for range 8 {
		wg.Go(func() {
			for i := int(next.Add(1)) - 1; i < n; i = int(next.Add(1)) - 1 {
				body := junkAnnouncement(t, i)
				resp, err := client.Post(base+"/announce", "application/json", strings.NewReader(string(body)))
				if err != nil {
					errs <- err
					return
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusAccepted {
					errs <- fmt.Errorf("announcement %d: status %d", i, resp.StatusCode)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

// readRosters has readers clients fetch the whole roster rounds times each,
// all at once, and returns the size of the last response and the most
// resident memory the bus showed while they read.
func readRosters(t *testing.T, p *busProcess, readers, rounds int) (size int, rss int64) {
	t.Helper()
	var (
		wg      sync.WaitGroup
		last    atomic.Int64
		failure atomic.Value
		stop    = make(chan struct{})
		sampled = make(chan int64)
	)
	go func() {
		var most int64
		for {
			r, _ := p.memory(t)
			most = max(most, r)
			select {
			case <-stop:
				sampled <- most
				return
			case <-time.After(5 * time.Millisecond):
			}
		}
	}()
	start := make(chan struct{})
	for range readers {
		wg.Go(func() {
			client := &http.Client{Timeout: 60 * time.Second}
			<-start
			for range rounds {
				resp, err := client.Get(p.base + "/roster")
				if err != nil {
					failure.Store(err.Error())
					return
				}
				n, err := io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if err != nil || resp.StatusCode != http.StatusOK {
					failure.Store(fmt.Sprintf("status %d, %v", resp.StatusCode, err))
					return
				}
				last.Store(n)
			}
		})
	}
	close(start)
	wg.Wait()
	close(stop)
	rss = <-sampled
	if f := failure.Load(); f != nil {
		t.Fatalf("reading the roster: %s", f)
	}
	return int(last.Load()), rss
}

// TestRosterFloodLeavesDiscoveryWorking: a bus client fills the roster with
// 4,096 announcements of the largest size from keys nobody can verify.
// The roster stays under the bytes agents read, sixteen clients reading it
// at once cost the bus little memory, and two real agents arriving
// afterwards still find each other, pair, and exchange messages.
func TestRosterFloodLeavesDiscoveryWorking(t *testing.T) {
	if testing.Short() {
		t.Skip("floods a bus process with 16 MiB of announcements")
	}
	t.Parallel()
	p := startBusProcess(t)
	floodRoster(t, p.base, bus.RosterCap)

	// The listing fits what agents read, and the flood, though it could
	// not all stay, filled it.
	resp, err := http.Get(p.base + "/roster")
	if err != nil {
		t.Fatal(err)
	}
	var roster struct{ Roster []json.RawMessage }
	err = json.NewDecoder(resp.Body).Decode(&roster)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	if n := len(roster.Roster); n >= bus.RosterCap || n < bus.MaxRosterBytes/(2*wire.MaxAnnounceBytes) {
		t.Fatalf("the roster lists %d junk entries", n)
	}

	size, rss := readRosters(t, p, 16, 5)
	_, peak := p.memory(t)
	t.Logf("roster of %d entries, %d bytes (bound %d); bus memory while 16 clients read it: at most %s sampled, peak %s over the whole run (bound 64 MiB)",
		len(roster.Roster), size, bus.MaxRosterBytes, mib(rss), mib(peak))
	if size > bus.MaxRosterBytes {
		t.Errorf("a roster response of %d bytes, more than %d", size, bus.MaxRosterBytes)
	}
	if peak >= 64<<20 {
		t.Errorf("the bus peaked at %s, want under 64 MiB", mib(peak))
	}

	alice := startBusAgent(t, "alice", 0xa1, p.base)
	bob := startBusAgent(t, "bob", 0xb0, p.base)
	alice.waitFor("discover", nil, "→ bob-1")
	bob.waitFor("discover", nil, "→ alice-1")

	alice.call("request_pair", map[string]any{"target": "bob"})
	bob.waitNotice("Pairing request")
	bob.call("accept_pair", map[string]any{"fingerprint": alice.signer.Public().Fingerprint()})
	alice.waitNotice("Paired with 'bob'")

	alice.call("send_message", map[string]any{"to": "bob", "text": "still reachable after the flood"})
	bob.waitFor("receive_messages", nil, "still reachable after the flood")
	bob.call("send_message", map[string]any{"to": "alice", "text": "and the answer comes back"})
	alice.waitFor("receive_messages", nil, "and the answer comes back")
}
