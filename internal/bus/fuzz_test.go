package bus

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/interlink-go/interlink/internal/store"
	"github.com/interlink-go/interlink/internal/wire"
)

// The fuzz targets feed arbitrary request bodies and queries through the
// whole handler with a working store. Properties: nothing panics, the
// status is one the endpoint documents (never 5xx), every error carries the
// JSON error body, and what is accepted comes back out as equal JSON.
// Seeds live in testdata/fuzz/<target>.

// fuzzServer returns a Server on a fake store and a frozen clock.
func fuzzServer() (*Server, *fakeStore) {
	st := newFakeStore(0)
	now := time.UnixMilli(testEpoch)
	return New(st, &Options{Now: func() time.Time { return now }, MaxRecvTimeout: time.Millisecond}), st
}

// serveBody posts body to path with a JSON content type.
func serveBody(srv *Server, path string, body []byte) *httptest.ResponseRecorder {
	req := httptest.NewRequest(http.MethodPost, path, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	rec := httptest.NewRecorder()
	srv.ServeHTTP(rec, req)
	return rec
}

// checkStatus fails unless code is one of allowed, and checks error bodies.
func checkStatus(t *testing.T, rec *httptest.ResponseRecorder, allowed ...int) {
	t.Helper()
	for _, c := range allowed {
		if rec.Code == c {
			checkErrorBody(t, rec.Code, rec.Body.Bytes())
			return
		}
	}
	t.Fatalf("status %d (%s), want one of %v", rec.Code, rec.Body, allowed)
}

// decodeFuzz decodes JSON for comparison; numbers keep their text.
func decodeFuzz(t *testing.T, b []byte) any {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		t.Fatalf("decoding %q: %v", b, err)
	}
	return v
}

func FuzzSendBody(f *testing.F) {
	f.Add([]byte(`{"to":"K#s","payload":{"text":"hi"}}`))
	f.Add([]byte(`{"to":"","payload":null}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		srv, st := fuzzServer()
		rec := serveBody(srv, "/send", body)
		checkStatus(t, rec, http.StatusAccepted, http.StatusBadRequest, http.StatusRequestEntityTooLarge,
			http.StatusUnprocessableEntity)
		if rec.Code != http.StatusAccepted {
			return
		}
		// Keys match exactly, as in the handler; a struct would also
		// take "TO" for "to".
		var in struct {
			To      string
			Payload json.RawMessage
		}
		var o map[string]json.RawMessage
		if err := json.Unmarshal(body, &o); err != nil {
			t.Fatalf("accepted body does not decode: %v", err)
		}
		in.Payload = o["payload"]
		if err := json.Unmarshal(o["to"], &in.To); err != nil {
			t.Fatalf("accepted body has no string to: %v", err)
		}
		rec = httptest.NewRecorder()
		srv.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, recvTarget(in.To, 0), nil))
		if rec.Code != http.StatusOK {
			t.Fatalf("recv: %d %s", rec.Code, rec.Body)
		}
		var out recvReply
		if err := json.Unmarshal(rec.Body.Bytes(), &out); err != nil || out.Status != "message" {
			t.Fatalf("recv reply %s: %v", rec.Body, err)
		}
		if diff := cmp.Diff(decodeFuzz(t, in.Payload), decodeFuzz(t, out.Envelope.Payload)); diff != "" {
			t.Fatalf("payload changed (-sent +received):\n%s", diff)
		}
		if !store.HasRoute(out.Ack, in.To) {
			t.Fatalf("ack key %q is not in route %q", out.Ack, in.To)
		}
		if n, _ := st.Depth(in.To); n != 1 {
			t.Fatalf("depth %d", n)
		}
	})
}

func FuzzAckBody(f *testing.F) {
	f.Add([]byte(`{"me":"K#s","ack":"K#s\u000000000000000000000001"}`))
	f.Add([]byte(`{"me":"K","ack":"K#s\u000000000000000000000001"}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		srv, st := fuzzServer()
		if _, _, err := st.Enqueue("K#s", []byte(`{"payload":1,"ts":1}`)); err != nil {
			t.Fatal(err)
		}
		rec := serveBody(srv, "/ack", body)
		checkStatus(t, rec, http.StatusOK, http.StatusBadRequest, http.StatusForbidden,
			http.StatusRequestEntityTooLarge, http.StatusUnprocessableEntity)
		var o map[string]json.RawMessage
		var key string
		n, _ := st.Depth("K#s")
		if rec.Code == http.StatusOK && json.Unmarshal(body, &o) == nil &&
			json.Unmarshal(o["ack"], &key) == nil && key == store.Key("K#s", 1) && n != 0 {
			t.Fatalf("acked the message but it is still queued")
		}
		if rec.Code != http.StatusOK && n != 1 {
			t.Fatalf("a refused ack removed the message")
		}
	})
}

func FuzzAnnounceBody(f *testing.F) {
	f.Add([]byte(sampleAnnouncement))
	f.Add([]byte(`{"pubkey":"k","age_ms":5}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		srv, _ := fuzzServer()
		rec := serveBody(srv, "/announce", body)
		checkStatus(t, rec, http.StatusAccepted, http.StatusBadRequest, http.StatusRequestEntityTooLarge)
		if (rec.Code == http.StatusRequestEntityTooLarge) != (len(body) > wire.MaxAnnounceBytes) {
			t.Fatalf("a body of %d bytes got %d; the limit is %d", len(body), rec.Code, wire.MaxAnnounceBytes)
		}
		if rec.Code != http.StatusAccepted {
			return
		}
		rec = httptest.NewRecorder()
		srv.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/roster", nil))
		var out struct{ Roster []json.RawMessage }
		if err := json.Unmarshal(rec.Body.Bytes(), &out); err != nil || len(out.Roster) != 1 {
			t.Fatalf("roster %s: %v", rec.Body, err)
		}
		want := decodeFuzz(t, body).(map[string]any)
		want["age_ms"] = json.Number("0")
		if diff := cmp.Diff(want, decodeFuzz(t, out.Roster[0])); diff != "" {
			t.Fatalf("roster element (-announced +listed):\n%s", diff)
		}
		// The same body unregisters the entry.
		if rec := serveBody(srv, "/unregister", body); rec.Code != http.StatusAccepted {
			t.Fatalf("unregister: %d %s", rec.Code, rec.Body)
		}
		if n := srv.roster.Len(); n != 0 {
			t.Fatalf("roster holds %d entries after unregister", n)
		}
	})
}

func FuzzRecvQuery(f *testing.F) {
	f.Add("me=K%23s&timeout_ms=0")
	f.Add("me=a+b&timeout_ms=18446744073709551615")
	f.Fuzz(func(t *testing.T, query string) {
		srv, st := fuzzServer()
		if _, _, err := st.Enqueue("K#s", []byte(`{"payload":1,"ts":1}`)); err != nil {
			t.Fatal(err)
		}
		req := httptest.NewRequest(http.MethodGet, "/recv", nil)
		req.URL.RawQuery = query
		rec := httptest.NewRecorder()
		srv.ServeHTTP(rec, req)
		checkStatus(t, rec, http.StatusOK, http.StatusBadRequest)
		if rec.Code != http.StatusOK {
			return
		}
		var out recvReply
		if err := json.Unmarshal(rec.Body.Bytes(), &out); err != nil {
			t.Fatalf("reply %s: %v", rec.Body, err)
		}
		if out.Status != "message" && out.Status != "timeout" {
			t.Fatalf("status %q", out.Status)
		}
		if n := srv.waiters.len(); n != 0 {
			t.Fatalf("waiter map holds %d routes", n)
		}
	})
}
