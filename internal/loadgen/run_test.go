package loadgen

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http/httptest"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/interlink-go/interlink/internal/bus"
	"github.com/interlink-go/interlink/internal/loadgen/measure"
	"github.com/interlink-go/interlink/internal/store"
	"github.com/interlink-go/interlink/internal/store/bolt"
)

// short is the measurement window of the test runs.
const short = 300 * time.Millisecond

func TestValidate(t *testing.T) {
	tests := []struct {
		name    string
		cfg     Config
		wantErr string // empty: valid
	}{
		{"zero value", Config{}, ""},
		{"loopback url", Config{URL: "http://127.0.0.1:9440"}, ""},
		{"ipv6 loopback url", Config{URL: "http://[::1]:9440/prefix/"}, ""},
		{"localhost url", Config{URL: "http://localhost:9440"}, ""},
		{"remote url refused", Config{URL: "http://192.168.1.20:9440"}, "--allow-remote"},
		{"remote name refused", Config{URL: "http://bus.example.com:9440"}, "--allow-remote"},
		{"wildcard refused", Config{URL: "http://0.0.0.0:9440"}, "--allow-remote"},
		{"remote url allowed", Config{URL: "http://192.168.1.20:9440", AllowRemote: true}, ""},
		{"https refused", Config{URL: "https://127.0.0.1:9440"}, "plain HTTP"},
		{"url with query refused", Config{URL: "http://127.0.0.1:9440/?x=1"}, "HOST:PORT"},
		{"unknown mode", Config{Mode: "storm"}, "unknown mode"},
		{"unknown store", Config{Store: "redb"}, "unknown store"},
		{"db without bolt", Config{DBPath: "x.db"}, "bolt"},
		{"store with url", Config{URL: "http://127.0.0.1:1", Store: StoreBolt}, "in-process"},
		{"pid without url", Config{BusPID: 1}, "--url"},
		{"floor with url", Config{URL: "http://127.0.0.1:1", Mode: ModeFloor}, "does not use a bus"},
		{"roundtrip routes below senders", Config{Senders: 4, Routes: 2}, "route per sender"},
		{"pipeline routes not receivers", Config{Mode: ModePipeline, Receivers: 4, Routes: 2}, "one route per receiver"},
		{"idle outside wake", Config{Idle: 5}, "wake only"},
		{"fill needs both", Config{FillRoutes: 5}, "both"},
		{"fill mode needs a fill", Config{Mode: ModeFill}, "fill routes"},
		{"negative duration", Config{Duration: -time.Second}, "negative"},
		{"huge duration", Config{Duration: time.Hour}, "limit"},
		{"too many senders", Config{Senders: 1 << 20}, "at most"},
		{"oversized payload", Config{Size: 3 << 20}, "size"},
		{"negative latency", Config{Latency: -time.Millisecond}, "latency"},
		{"huge latency", Config{Latency: time.Minute}, "latency"},
		{"latency without a network", Config{Mode: ModeBoltFloor, Latency: time.Millisecond}, "--latency"},
		{"negative rounds", Config{Rounds: -1}, "rounds"},
		{"rounds for wake", Config{Mode: ModeWake, Rounds: 2}, "--rounds applies"},
		{"rounds too short", Config{Rounds: 100, Duration: time.Second}, "too short"},
		{"agentsend routes below senders", Config{Mode: ModeAgentSend, Senders: 3, Routes: 2}, "route per sender"},
		{"full with a floor", Config{Mode: ModeFull, WithFloor: true}, "no floor"},
		{"full with a fill", Config{Mode: ModeFull, FillRoutes: 2, FillMsgs: 2}, "no floor"},
		{"full through the proxy", Config{Mode: ModeFull, Latency: time.Millisecond}, "--latency"},
		{"byte bounds with url", Config{URL: "http://127.0.0.1:1", TotalBytes: 1 << 20}, "in-process"},
		{"byte bounds on nats", Config{Store: StoreNATS, NATSURL: "nats://127.0.0.1:1", TotalBytes: 1 << 20}, "memory and bolt"},
		{"negative byte bound", Config{QueueBytes: -1}, "negative"},
		{"stall", Config{Mode: ModeStall, BusCommand: []string{"interlink-bus"}, StallKinds: []string{"body", "poll"}}, ""},
		{"stall without a bus command", Config{Mode: ModeStall}, "command"},
		{"stall with url", Config{Mode: ModeStall, BusCommand: []string{"b"}, URL: "http://127.0.0.1:1"}, "process of its own"},
		{"stall of an unknown kind", Config{Mode: ModeStall, BusCommand: []string{"b"}, StallKinds: []string{"storm"}}, "unknown stall kind"},
		{"stall with too many conns", Config{Mode: ModeStall, BusCommand: []string{"b"}, Conns: 1 << 20}, "conns"},
		{"conns outside stall", Config{Conns: 5}, "mode stall only"},
		{"variants", Config{TLS: true, Signed: true, Sealed: true, Store: StoreBolt}, ""},
		{"signed against a url", Config{URL: "http://127.0.0.1:1", Signed: true}, "--signed"},
		{"sealed in pipeline", Config{Mode: ModePipeline, Sealed: true}, "--sealed"},
		{"tls on nats", Config{Store: StoreNATS, NATSURL: "nats://127.0.0.1:1", TLS: true}, "--tls"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.cfg.Validate()
			switch {
			case tt.wantErr == "" && err != nil:
				t.Fatalf("Validate() = %v, want nil", err)
			case tt.wantErr != "" && err == nil:
				t.Fatalf("Validate() = nil, want an error mentioning %q", tt.wantErr)
			case err != nil && (!errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), tt.wantErr)):
				t.Fatalf("Validate() = %v, want ErrConfig mentioning %q", err, tt.wantErr)
			}
		})
	}
}

// TestRunRefusesRemoteURL checks that Run sends nothing to a host that is
// not loopback: the configuration error comes back before any request.
func TestRunRefusesRemoteURL(t *testing.T) {
	start := time.Now()
	// 192.0.2.0/24 is reserved for documentation; nothing answers there.
	rep, err := Run(t.Context(), Config{URL: "http://192.0.2.1:9440", Duration: short}, nil)
	if !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), "--allow-remote") {
		t.Fatalf("Run() error = %v, want ErrConfig about --allow-remote", err)
	}
	if rep != nil {
		t.Errorf("Run() returned a report: %+v", rep)
	}
	if d := time.Since(start); d > time.Second {
		t.Errorf("refusal took %v: something was attempted", d)
	}
}

// checkResult requires a result called name that did some work without
// errors and whose fields are consistent.
func checkResult(t *testing.T, res measure.Result, name string, cfg Config) {
	t.Helper()
	if res.Name != name {
		t.Errorf("result name %q, want %q", res.Name, name)
	}
	if res.Ops <= 0 {
		t.Errorf("%s: no operations completed", name)
	}
	if res.Errors != 0 {
		t.Errorf("%s: %d errors, first: %s", name, res.Errors, res.FirstError)
	}
	// The window ends at the deadline, or earlier when the work ran out.
	if res.Elapsed <= 0 || res.Elapsed > cfg.Duration+measure.Grace {
		t.Errorf("%s: elapsed %v, want within (0, %v]", name, res.Elapsed, cfg.Duration+measure.Grace)
	}
	l := res.Latency
	if l.Count != res.Ops || l.Kept == 0 {
		t.Errorf("%s: latency count %d kept %d for %d ops", name, l.Count, l.Kept, res.Ops)
	}
	if !(0 < l.P50 && l.P50 <= l.P99 && l.P99 <= l.P999 && l.P999 <= l.Max) {
		t.Errorf("%s: percentiles out of order: %+v", name, l)
	}
	if res.OpsPerSec() <= 0 {
		t.Errorf("%s: ops/s %v", name, res.OpsPerSec())
	}
	if !strings.HasPrefix(res.String(), name+" ") || !strings.Contains(res.String(), " p999=") {
		t.Errorf("%s: report line %q", name, res.String())
	}
	if name != string(ModeFill) && name != string(ModeFull) && name != string(ModeBoltFloor) {
		if _, ok := dialsPerOp(t, res); !ok {
			t.Errorf("%s: no dials_per_op in %q", name, res.String())
		}
	}
}

// dialsPerOp returns the dials_per_op figure of res.
func dialsPerOp(t *testing.T, res measure.Result) (float64, bool) {
	t.Helper()
	for _, f := range res.Extra {
		if f.Key == "dials_per_op" {
			if f.Value == "n/a" { // no operation to divide by
				return 0, true
			}
			v, err := strconv.ParseFloat(f.Value, 64)
			if err != nil {
				t.Fatalf("dials_per_op %q: %v", f.Value, err)
			}
			return v, true
		}
	}
	return 0, false
}

// An agent's client opens its connections once and sends over them; a
// client without keep-alive opens one per request.
func TestAgentSendCountsDials(t *testing.T) {
	for _, keep := range []bool{true, false} {
		t.Run(fmt.Sprintf("keepalive=%v", keep), func(t *testing.T) {
			rep := runBounded(t, Config{Mode: ModeAgentSend, KeepAlive: keep, Duration: short}, 1)
			res := rep.Results[0]
			got, _ := dialsPerOp(t, res)
			switch {
			case res.Ops < 10:
				t.Fatalf("only %d sends: too few to tell", res.Ops)
			case keep && got >= 0.5:
				t.Errorf("the agent's client opened %.3f connections per send, want well below 1", got)
			case !keep && got < 1:
				t.Errorf("a client without keep-alive opened %.3f connections per send, want at least 1", got)
			}
		})
	}
}

// checkRSS requires RSS figures for a result of an in-process bus.
func checkRSS(t *testing.T, res measure.Result) {
	t.Helper()
	if runtime.GOOS != "linux" {
		if res.RSSBefore != -1 || res.RSSAfter != -1 {
			t.Errorf("%s: rss %d, %d off Linux, want -1 (n/a)", res.Name, res.RSSBefore, res.RSSAfter)
		}
		return
	}
	if res.RSSBefore <= 0 || res.RSSAfter <= 0 {
		t.Errorf("%s: rss before %d after %d, want both positive", res.Name, res.RSSBefore, res.RSSAfter)
	}
}

// runBounded runs cfg and requires that it returns by itself within the
// bound the package documents (per phase: duration plus grace), so a run
// that does not stop fails the test instead of hanging it.
func runBounded(t *testing.T, cfg Config, phases int) *Report {
	t.Helper()
	start := time.Now()
	rep, err := Run(t.Context(), cfg, nil)
	if err != nil {
		t.Fatalf("Run() = %v", err)
	}
	// Generous: this checks that the run ends, not how fast it is.
	if limit := time.Duration(phases)*(cfg.Duration+measure.Grace) + 5*time.Second; time.Since(start) > limit {
		t.Errorf("Run() took %v, over its bound %v", time.Since(start), limit)
	}
	var out bytes.Buffer
	if err := rep.Write(&out); err != nil {
		t.Fatal(err)
	}
	t.Logf("report:\n%s", out.String())
	if !strings.HasPrefix(out.String(), "# mode=") {
		t.Errorf("report does not start with its header:\n%s", out.String())
	}
	return rep
}

func TestRunModes(t *testing.T) {
	tests := []struct {
		name   string
		cfg    Config
		phases int
		want   []string // result names in order
	}{
		{"roundtrip", Config{Mode: ModeRoundtrip}, 1, []string{"roundtrip"}},
		{"roundtrip several routes per sender", Config{Mode: ModeRoundtrip, Senders: 2, Routes: 5, KeepAlive: true}, 1, []string{"roundtrip"}},
		{"pipeline", Config{Mode: ModePipeline, Senders: 2, Receivers: 2}, 1, []string{"pipeline"}},
		{"pipeline without a window", Config{Mode: ModePipeline, Senders: 2, Receivers: 2, Window: -1}, 1, []string{"pipeline"}},
		{"wake", Config{Mode: ModeWake, Idle: 20}, 2, []string{"wake"}},
		{"floor", Config{Mode: ModeFloor, Senders: 2}, 1, []string{"floor"}},
		{"fill", Config{Mode: ModeFill, FillRoutes: 10, FillMsgs: 3, Senders: 2}, 1, []string{"fill"}},
		{"boltfloor", Config{Mode: ModeBoltFloor}, 1, []string{"boltfloor"}},
		{"roundtrip after a fill", Config{Mode: ModeRoundtrip, FillRoutes: 5, FillMsgs: 2}, 2, []string{"fill", "roundtrip"}},
		{"pipeline with floor", Config{Mode: ModePipeline, WithFloor: true}, 2, []string{"pipeline", "floor"}},
		{"wake with floor", Config{Mode: ModeWake, WithFloor: true}, 3, []string{"wake", "floor"}},
		{"bolt roundtrip with floors", Config{Mode: ModeRoundtrip, Store: StoreBolt, WithFloor: true}, 4, []string{"roundtrip", "floor", "wirefloor", "boltfloor"}},
		{"agentsend with floor", Config{Mode: ModeAgentSend, KeepAlive: true, WithFloor: true}, 2, []string{"agentsend", "floor"}},
		{"agentsend new connections", Config{Mode: ModeAgentSend, Senders: 2}, 1, []string{"agentsend"}},
		{"roundtrip in rounds with floors", Config{Mode: ModeRoundtrip, Store: StoreBolt, WithFloor: true, Rounds: 3}, 4, []string{"roundtrip", "floor", "wirefloor", "boltfloor"}},
		{"roundtrip through the proxy", Config{Mode: ModeRoundtrip, Latency: time.Millisecond, WithFloor: true}, 3, []string{"roundtrip", "floor", "wirefloor"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := tt.cfg
			cfg.Duration = short
			rep := runBounded(t, cfg, tt.phases)
			if len(rep.Results) != len(tt.want) {
				t.Fatalf("got %d results, want %v", len(rep.Results), tt.want)
			}
			for i, res := range rep.Results {
				checkResult(t, res, tt.want[i], rep.Config)
				switch res.Name {
				case "floor", "wirefloor", "boltfloor":
					if res.RSSBefore != 0 || res.RSSAfter != 0 {
						t.Errorf("%s reports rss of no bus: %d, %d", res.Name, res.RSSBefore, res.RSSAfter)
					}
				default:
					checkRSS(t, res)
				}
			}
		})
	}
}

func TestFillReportsItsPayload(t *testing.T) {
	cfg := Config{Mode: ModeFill, FillRoutes: 4, FillMsgs: 5, Size: 100, Duration: 5 * time.Second}
	rep := runBounded(t, cfg, 1)
	res := rep.Results[0]
	if res.Ops != 20 {
		t.Fatalf("fill sent %d messages, want 20", res.Ops)
	}
	fields := map[string]string{}
	for _, f := range res.Extra {
		fields[f.Key] = f.Value
	}
	if fields["complete"] != "true" || fields["payload_bytes"] != measure.Bytes(2000) {
		t.Errorf("fill fields %v, want complete=true payload_bytes=%s", fields, measure.Bytes(2000))
	}
}

// Full mode sends until the bus refuses with 507 and reports what the bus
// says it holds, within its total.
func TestFullFillsTheBusToItsTotal(t *testing.T) {
	for _, st := range []string{StoreMemory, StoreBolt} {
		t.Run(st, func(t *testing.T) {
			const total = 1 << 20
			cfg := Config{Mode: ModeFull, Store: st, TotalBytes: total, Size: 30_000, Senders: 2, Routes: 64, KeepAlive: true, Duration: 10 * time.Second}
			rep := runBounded(t, cfg, 1)
			res := rep.Results[0]
			checkResult(t, res, "full", rep.Config)
			fields := map[string]string{}
			for _, f := range res.Extra {
				fields[f.Key] = f.Value
			}
			// Each message counts a little over 30,000 bytes: 34 fit.
			if fields["full"] != "true" || res.Ops != 34 || fields["queued"] != "34" || fields["total_bytes"] != measure.Bytes(total) {
				t.Fatalf("full sent %d messages, fields %v; want 34 and full=true", res.Ops, fields)
			}
			if fields["refused"] == "0" || res.Errors != 0 {
				t.Fatalf("refused %s, errors %d (%s)", fields["refused"], res.Errors, res.FirstError)
			}
		})
	}
}

// routeLog is a store that remembers every route enqueued to.
type routeLog struct {
	store.Store
	mu     sync.Mutex
	routes map[string]bool
}

func (s *routeLog) Enqueue(route string, value []byte) (string, int, error) {
	s.mu.Lock()
	s.routes[route] = true
	s.mu.Unlock()
	return s.Store.Enqueue(route, value)
}

// TestRunAgainstURL loads a bus given by URL and checks that the run left
// no messages behind in the queues it used.
func TestRunAgainstURL(t *testing.T) {
	st := &routeLog{Store: store.NewMemory(nil), routes: map[string]bool{}}
	srv := bus.New(st, nil)
	ts := httptest.NewServer(srv)
	t.Cleanup(func() {
		srv.Shutdown()
		ts.Close()
		st.Close()
	})
	for _, mode := range []Mode{ModeRoundtrip, ModePipeline, ModeWake} {
		t.Run(string(mode), func(t *testing.T) {
			cfg := Config{URL: ts.URL, Mode: mode, Senders: 2, Receivers: 2, Duration: short}
			switch mode {
			case ModeRoundtrip:
				cfg.Receivers = 0
			case ModeWake:
				cfg.Senders, cfg.Receivers, cfg.Idle = 0, 0, 10
			}
			rep := runBounded(t, cfg, 2)
			res := rep.Results[0]
			checkResult(t, res, string(mode), rep.Config)
			if res.RSSBefore != 0 || res.RSSAfter != 0 {
				t.Errorf("rss reported for a bus of unknown pid: %d, %d", res.RSSBefore, res.RSSAfter)
			}
		})
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	if len(st.routes) == 0 {
		t.Fatal("nothing was sent")
	}
	for route := range st.routes {
		if n, err := st.Depth(route); err != nil || n != 0 {
			t.Errorf("route %q left with %d messages (err %v)", route, n, err)
		}
	}
}

func TestRunStopsWhenCanceled(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	// Any moment of the minute-long run will do; this is not a wait for
	// something to happen.
	time.AfterFunc(100*time.Millisecond, cancel)
	start := time.Now()
	rep, err := Run(ctx, Config{Mode: ModePipeline, Senders: 2, Receivers: 2, Duration: time.Minute}, nil)
	if !errors.Is(err, context.Canceled) {
		t.Errorf("Run() error = %v, want context.Canceled", err)
	}
	if time.Since(start) > measure.Grace+5*time.Second {
		t.Errorf("Run() took %v after a cancel at 100ms", time.Since(start))
	}
	if rep == nil || len(rep.Results) != 1 || rep.Results[0].Elapsed > time.Second {
		t.Errorf("report after cancel: %+v", rep)
	}
}

func TestBoltFloorRefusesExistingFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "taken.db")
	st, err := bolt.Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	st.Close()
	_, err = Run(t.Context(), Config{Mode: ModeBoltFloor, DBPath: path, Duration: short}, nil)
	if err == nil || !strings.Contains(err.Error(), "already exists") {
		t.Errorf("Run() = %v, want a refusal of the existing file", err)
	}
	_, err = Run(t.Context(), Config{Store: StoreBolt, DBPath: path, Duration: short}, nil)
	if err == nil || !strings.Contains(err.Error(), "already exists") {
		t.Errorf("Run() with the bolt store = %v, want a refusal of the existing file", err)
	}
}

func TestWindow(t *testing.T) {
	ctx := t.Context()
	w := make(window, 2)
	for range 2 {
		if !w.acquire(ctx) {
			t.Fatal("acquire failed with room in the window")
		}
	}
	// Full: the third waits for a slot, then goes ahead anyway, as it
	// must when a slot was lost to a dropped message.
	start := time.Now()
	if !w.acquire(ctx) {
		t.Fatal("acquire on a full window reported a canceled context")
	}
	if d := time.Since(start); d < windowStall {
		t.Errorf("acquire on a full window returned after %v, want at least %v", d, windowStall)
	}
	// Releasing more than was taken does not block.
	for range 5 {
		w.release()
	}
	if !w.acquire(ctx) {
		t.Fatal("acquire failed after releases")
	}
	// A nil window has no limit; a canceled context stops acquire.
	var none window
	none.release()
	if !none.acquire(ctx) {
		t.Error("nil window refused")
	}
	canceled, cancel := context.WithCancel(ctx)
	cancel()
	full := make(window, 1)
	full.acquire(ctx)
	if full.acquire(canceled) {
		t.Error("acquire with a canceled context succeeded")
	}
}
