package bus

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/interlink-go/interlink/internal/store"
	"github.com/interlink-go/interlink/internal/testutil"
	"github.com/interlink-go/interlink/internal/wire"
)

// benchServer serves a fresh in-memory bus on a loopback listener.
func benchServer(b *testing.B) (*Server, string) {
	b.Helper()
	st := store.NewMemory(nil)
	srv := New(st, nil)
	ts := httptest.NewServer(srv)
	b.Cleanup(func() {
		srv.Shutdown()
		ts.Close()
		st.Close()
	})
	return srv, ts.URL
}

// mustDo sends a request and drains the answer, failing on an unexpected
// status.
func mustDo(b *testing.B, client *http.Client, method, url, body string, want int) []byte {
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		b.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := client.Do(req)
	if err != nil {
		b.Fatal(err)
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	if err != nil {
		b.Fatal(err)
	}
	if resp.StatusCode != want {
		b.Fatalf("%s %s: %d %s", method, url, resp.StatusCode, out)
	}
	return out
}

// reportLatency adds percentile metrics in microseconds.
func reportLatency(b *testing.B, lat []time.Duration) {
	if len(lat) == 0 {
		return
	}
	slices.Sort(lat)
	pct := func(p float64) float64 {
		return float64(lat[min(int(p*float64(len(lat))), len(lat)-1)]) / float64(time.Microsecond)
	}
	b.ReportMetric(pct(0.50), "p50-µs")
	b.ReportMetric(pct(0.99), "p99-µs")
	b.ReportMetric(pct(0.999), "p999-µs")
}

// BenchmarkRoundTrip is BM1 for one route, serial, on the in-memory store:
// send, poll, ack.
func BenchmarkRoundTrip(b *testing.B) {
	for _, mode := range []struct {
		name      string
		keepAlive bool
	}{{"keepalive", true}, {"newconn", false}} {
		b.Run(mode.name, func(b *testing.B) {
			_, base := benchServer(b)
			client := &http.Client{Transport: &http.Transport{DisableKeepAlives: !mode.keepAlive}}
			defer client.CloseIdleConnections()
			lat := make([]time.Duration, 0, b.N)
			for b.Loop() {
				t0 := time.Now()
				mustDo(b, client, http.MethodPost, base+"/send", `{"to":"K#s","payload":{"text":"hello"}}`, http.StatusAccepted)
				body := mustDo(b, client, http.MethodGet, base+"/recv?me=K%23s&timeout_ms=0", "", http.StatusOK)
				var r recvReply
				if err := json.Unmarshal(body, &r); err != nil || r.Status != "message" {
					b.Fatalf("recv: %s", body)
				}
				mustDo(b, client, http.MethodPost, base+"/ack", `{"me":"K#s","ack":`+jstr(r.Ack)+`}`, http.StatusOK)
				lat = append(lat, time.Since(t0))
			}
			reportLatency(b, lat)
		})
	}
}

// BenchmarkWake is BM2: the time from a send to the return of the poll it
// wakes, with other idle polls parked on other routes.
func BenchmarkWake(b *testing.B) {
	for _, others := range []int{1, 1000} {
		b.Run("others="+strconv.Itoa(others), func(b *testing.B) {
			srv, base := benchServer(b)
			client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: others + 2}}
			defer client.CloseIdleConnections()
			ctx, cancel := context.WithCancel(b.Context())
			defer cancel()
			done := make(chan struct{}, others)
			for i := range others {
				go func() {
					defer func() { done <- struct{}{} }()
					req, _ := http.NewRequestWithContext(ctx, http.MethodGet, base+recvTarget("idle"+strconv.Itoa(i), 120_000), nil)
					if resp, err := client.Do(req); err == nil {
						io.Copy(io.Discard, resp.Body)
						resp.Body.Close()
					}
				}()
			}
			testutil.Eventually(b, time.Minute, "the idle polls to park", func() bool { return srv.waiters.len() >= others })
			lat := make([]time.Duration, 0, b.N)
			i := 0
			for b.Loop() {
				route := "target" + strconv.Itoa(i)
				i++
				returned := make(chan time.Time, 1)
				go func() {
					resp, err := client.Get(base + recvTarget(route, 10_000))
					if err == nil {
						io.Copy(io.Discard, resp.Body)
						resp.Body.Close()
					}
					returned <- time.Now()
				}()
				for srv.waiters.parked(route) == 0 {
					runtime.Gosched()
				}
				t0 := time.Now()
				mustDo(b, client, http.MethodPost, base+"/send", `{"to":"`+route+`","payload":1}`, http.StatusAccepted)
				lat = append(lat, (<-returned).Sub(t0))
			}
			reportLatency(b, lat)
			cancel()
			for range others {
				<-done
			}
		})
	}
}

// BenchmarkRoster is BM6: listing a full roster of 1 KiB announcements, and
// announcing into it.
func BenchmarkRoster(b *testing.B) {
	srv, base := benchServer(b)
	pad := strings.Repeat("x", 900)
	for i := range RosterCap {
		body := fmt.Sprintf(`{"pubkey":"key%04d","name":"node","session":{"session_id":"%d","cwd":"/home/me","summary":%q},"ts":1,"sig":"c2ln"}`, i, i, pad)
		srv.roster.Upsert(mustAnnouncement(b, body), srv.millis())
	}
	client := &http.Client{}
	defer client.CloseIdleConnections()
	b.Run("list", func(b *testing.B) {
		var size int
		for b.Loop() {
			size = len(mustDo(b, client, http.MethodGet, base+"/roster", "", http.StatusOK))
		}
		b.SetBytes(int64(size))
	})
	b.Run("announce", func(b *testing.B) {
		i := 0
		for b.Loop() {
			body := fmt.Sprintf(`{"pubkey":"key%04d","name":"node","session":{"session_id":"%d"},"ts":2,"sig":"c2ln"}`, i%RosterCap, i%RosterCap)
			i++
			mustDo(b, client, http.MethodPost, base+"/announce", body, http.StatusAccepted)
		}
	})
}

func mustAnnouncement(b *testing.B, body string) wire.Announce {
	a, err := wire.DecodeAnnounce([]byte(body))
	if err != nil {
		b.Fatal(err)
	}
	return a
}

// BenchmarkHandlers measures the bus's own work per request, without a
// network: send, recv and ack of one message through ServeHTTP on the
// in-memory store, with the allocations that takes.
func BenchmarkHandlers(b *testing.B) {
	st := store.NewMemory(nil)
	srv := New(st, nil)
	b.Cleanup(func() { srv.Shutdown(); st.Close() })
	sendBody := []byte(`{"to":"K#s","payload":{"text":"` + strings.Repeat("x", 256) + `"}}`)
	b.ReportAllocs()
	for b.Loop() {
		rec := httptest.NewRecorder()
		req := httptest.NewRequest(http.MethodPost, "/send", bytes.NewReader(sendBody))
		req.Header.Set("Content-Type", "application/json")
		srv.ServeHTTP(rec, req)
		if rec.Code != http.StatusAccepted {
			b.Fatalf("send: %d", rec.Code)
		}
		rec = httptest.NewRecorder()
		srv.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/recv?me=K%23s&timeout_ms=1000", nil))
		var r recvReply
		if err := json.Unmarshal(rec.Body.Bytes(), &r); err != nil || r.Status != "message" {
			b.Fatalf("recv: %s", rec.Body)
		}
		rec = httptest.NewRecorder()
		req = httptest.NewRequest(http.MethodPost, "/ack", strings.NewReader(`{"me":"K#s","ack":`+jstr(r.Ack)+`}`))
		req.Header.Set("Content-Type", "application/json")
		srv.ServeHTTP(rec, req)
		if rec.Code != http.StatusOK {
			b.Fatalf("ack: %d", rec.Code)
		}
	}
}
