package pairing

import (
	"bytes"
	"encoding/json"
	"errors"
	"log/slog"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/interlink-go/interlink/internal/route"
	"github.com/interlink-go/interlink/internal/testutil"
)

// jobJSON returns the file form of a valid queued job.
func jobJSON(tb testing.TB, f *fixture, id string) string {
	tb.Helper()
	job, err := RequestMessage(f.me, testutil.NumberedSigner(tb, 1).Public(), route.New(testutil.NumberedSigner(tb, 1).Public().String(), "s"),
		"me", id, f.meRoute, baseTime)
	if err != nil {
		tb.Fatal(err)
	}
	data, err := encode(State{Queued: []Job{job}})
	if err != nil {
		tb.Fatal(err)
	}
	s := string(data)
	return s[strings.Index(s, `"queued":[`)+len(`"queued":[`) : len(s)-2]
}

func TestCorruptJobDropped(t *testing.T) {
	var logs bytes.Buffer
	f := newFixture(t)
	store, err := Open(f.root, f.me.Public(), f.meRoute.Session, &Options{
		Logger: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
	})
	if err != nil {
		t.Fatal(err)
	}
	bad := `{"route":"x#y","msg":{"from":"x","to":"y","text":"","ts":1,"msg_id":"bad-1"}}`
	file := `{"inbound":[],"outbound":[],"queued":[` +
		jobJSON(t, f, "good-1") + "," + bad + `,42,{"msg":{}},` + jobJSON(t, f, "good-2") + `]}`
	writeFile(t, store.Path(), []byte(file))

	st, err := store.Load()
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	var ids []string
	for _, j := range st.Queued {
		ids = append(ids, j.Msg.MsgID)
	}
	if !slices.Equal(ids, []string{"good-1", "good-2"}) {
		t.Errorf("loaded jobs %q, want the two good ones", ids)
	}
	if got := readFile(t, store.Path()); string(got) != file {
		t.Error("Load changed the file")
	}

	if _, err := store.Receive(Request{Key: "k", Name: "n", RequestID: "r", ReplyTo: "k#s"}); err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, store.Path()); bytes.Contains(got, []byte("bad-1")) || bytes.Count(got, []byte(`"route"`)) != 2 {
		t.Errorf("after a change the file still holds the bad jobs:\n%s", got)
	}
	if st2, err := store.Load(); err != nil || len(st2.Queued) != 2 {
		t.Errorf("after the change: %d jobs, %v; want 2", len(st2.Queued), err)
	}
	if !strings.Contains(logs.String(), "msg_id=bad-1") || !strings.Contains(logs.String(), "level=WARN") {
		t.Errorf("dropping the bad job was not logged with its msg_id:\n%s", logs.String())
	}
	// The next write must keep its list an empty list, never null.
	if _, err := store.Reject("k"); err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, store.Path()); !bytes.Contains(got, []byte(`"inbound":[]`)) {
		t.Errorf("empty inbound not written as []: %s", got)
	}
}

func TestCorruptFile(t *testing.T) {
	key := testutil.NumberedSigner(t, 1).Public().String()
	tests := []struct {
		name, data string
	}{
		{"garbage", "not json at all"},
		{"empty file", ""},
		{"array", "[]"},
		{"null", "null"},
		{"missing inbound", `{"outbound":[],"queued":[]}`},
		{"missing outbound", `{"inbound":[],"queued":[]}`},
		{"missing queued", `{"inbound":[],"outbound":[]}`},
		{"null list", `{"inbound":null,"outbound":[],"queued":[]}`},
		{"list of wrong type", `{"inbound":{},"outbound":[],"queued":[]}`},
		{"request missing request_id", `{"inbound":[{"key":"` + key + `","name":"a","reply_to":"x#y"}],"outbound":[],"queued":[]}`},
		{"request field of wrong type", `{"inbound":[],"outbound":[{"key":1,"name":"a","request_id":"r","reply_to":"x#y"}],"queued":[]}`},
		{"request key in another case", `{"inbound":[{"KEY":"k","name":"a","request_id":"r","reply_to":"x#y"}],"outbound":[],"queued":[]}`},
		{"truncated", `{"inbound":[],"outbound":[],"queued":[`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			store, err := Open(t.TempDir(), testutil.NumberedSigner(t, 0).Public(), "s1", nil)
			if err != nil {
				t.Fatal(err)
			}
			writeFile(t, store.Path(), []byte(tt.data))

			if _, err := store.Load(); !errors.Is(err, ErrCorrupt) {
				t.Errorf("Load error = %v, want ErrCorrupt", err)
			}
			if _, err := store.Find(key); !errors.Is(err, ErrCorrupt) {
				t.Errorf("Find error = %v, want ErrCorrupt", err)
			}
			if _, err := store.Receive(Request{Key: key, Name: "a", RequestID: "r", ReplyTo: key + "#s"}); !errors.Is(err, ErrCorrupt) {
				t.Errorf("Receive error = %v, want ErrCorrupt", err)
			}
			if err := store.Sent("r"); !errors.Is(err, ErrCorrupt) {
				t.Errorf("Sent error = %v, want ErrCorrupt", err)
			}
			if got := readFile(t, store.Path()); string(got) != tt.data {
				t.Errorf("file overwritten: %q, want %q", got, tt.data)
			}
		})
	}
}

func TestMissingFileIsEmpty(t *testing.T) {
	f := newFixture(t)
	st, err := f.store.Load()
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Inbound)+len(st.Outbound)+len(st.Queued) != 0 {
		t.Errorf("missing file loads as %+v, want the empty state", st)
	}
	if _, err := os.Stat(f.store.Path()); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Load or Open created the file (stat: %v)", err)
	}
	// A change that changes nothing does not create the file either.
	if err := f.store.Sent("x"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(f.store.Path()); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("no-op change created the file (stat: %v)", err)
	}
}

func TestFileShape(t *testing.T) {
	f := newFixture(t)
	f.receive(t, testutil.NumberedSigner(t, 1), "alice", "k1")
	f.request(t, testutil.NumberedSigner(t, 2), "bob", "r1", baseTime)
	data := readFile(t, f.store.Path())
	if bytes.ContainsAny(data, "\n\t") {
		t.Errorf("file is not compact JSON: %s", data)
	}

	var top map[string]any
	if err := json.Unmarshal(data, &top); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"inbound", "outbound", "queued"}, keys(top)); diff != "" {
		t.Errorf("top-level keys (-want +got):\n%s", diff)
	}
	requestKeys := []string{"key", "name", "reply_to", "request_id"}
	for _, list := range []string{"inbound", "outbound"} {
		entries := top[list].([]any)
		if len(entries) != 1 {
			t.Fatalf("%s holds %d entries, want 1", list, len(entries))
		}
		if diff := cmp.Diff(requestKeys, keys(entries[0].(map[string]any))); diff != "" {
			t.Errorf("%s request keys (-want +got):\n%s", list, diff)
		}
	}
	job := top["queued"].([]any)[0].(map[string]any)
	if diff := cmp.Diff([]string{"msg", "route"}, keys(job)); diff != "" {
		t.Errorf("job keys (-want +got):\n%s", diff)
	}
	msgKeys := []string{"from", "kind", "msg_id", "reply_to", "sig", "text", "to", "ts"}
	if diff := cmp.Diff(msgKeys, keys(job["msg"].(map[string]any))); diff != "" {
		t.Errorf("knock keys (-want +got):\n%s", diff)
	}
	// The message keeps the declared key order, as other implementations
	// write it.
	if !bytes.Contains(data, []byte(`"msg":{"from":`)) || !bytes.Contains(data, []byte(`{"key":`)) {
		t.Errorf("unexpected key order: %s", data)
	}
}

func keys(m map[string]any) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

func FuzzDecode(f *testing.F) {
	fx := newFixture(f)
	f.Add([]byte(`{"inbound":[],"outbound":[],"queued":[]}`))
	f.Add([]byte(`{"inbound":[{"key":"k","name":"n","request_id":"r","reply_to":"k#s"}],"outbound":[],"queued":[` +
		jobJSON(f, fx, "j1") + `,{"route":"x"}]}`))
	f.Add([]byte(`{"inbound":null}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		st, _, err := decode(data, true)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("decode error %v does not wrap ErrCorrupt", err)
			}
			return
		}
		enc, err := encode(st)
		if err != nil {
			t.Fatal(err)
		}
		again, skipped, err := decode(enc, true)
		if err != nil || len(skipped) != 0 {
			t.Fatalf("re-decoding %s: %v (skipped %v)", enc, err, skipped)
		}
		if diff := cmp.Diff(st, again, cmpopts.EquateEmpty()); diff != "" {
			t.Errorf("round trip changed the state (-first +second):\n%s", diff)
		}
	})
}
