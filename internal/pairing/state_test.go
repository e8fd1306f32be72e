package pairing

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
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
	m, err := job.Msg.MarshalJSON()
	if err != nil {
		tb.Fatal(err)
	}
	return fmt.Sprintf(`{"route":%q,"msg":%s}`, job.Route, m)
}

// The jobs an earlier version queued in the file survive every change to
// it and go to the outbox with MoveQueued, which drops and logs those that
// do not decode or that this side would not have queued.
func TestMoveQueuedHandsEarlierJobsToTheOutbox(t *testing.T) {
	var logs testutil.LockedBuffer
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
	if _, err := store.Load(); err != nil {
		t.Fatalf("Load: %v", err)
	}
	if got := readFile(t, store.Path()); string(got) != file {
		t.Error("Load changed the file")
	}
	// A change keeps them: an earlier version may still be sending them.
	if _, err := store.Receive(Request{Key: "k", Name: "n", RequestID: "r", ReplyTo: "k#s"}); err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, store.Path()); !bytes.Contains(got, []byte("bad-1")) || bytes.Count(got, []byte(`"route"`)) != 3 {
		t.Errorf("a change lost queued jobs:\n%s", got)
	}

	f.ob.fail = errors.New("outbox full")
	if n, err := store.MoveQueued(t.Context(), f.me.Public(), f.ob); err != nil || n != 0 {
		t.Errorf("MoveQueued to a refusing outbox = %d, %v; want 0 moved", n, err)
	}
	if got := readFile(t, store.Path()); bytes.Count(got, []byte(`"route"`)) != 2 {
		t.Errorf("the refused jobs are not kept for the next call:\n%s", got)
	}
	f.ob.fail = nil
	if n, err := store.MoveQueued(t.Context(), f.me.Public(), f.ob); err != nil || n != 2 {
		t.Errorf("MoveQueued = %d, %v; want the 2 good jobs moved", n, err)
	}
	if got := f.ob.ids(); !slices.Equal(got, []string{"good-1", "good-2"}) {
		t.Errorf("outbox holds %q, want the two good jobs in order", got)
	}
	if got := f.ob.labels[0]; !strings.HasPrefix(got, requestLabel) {
		t.Errorf("knock logged for %q, want a pairing request label", got)
	}
	if got := readFile(t, store.Path()); !bytes.Contains(got, []byte(`"queued":[]`)) {
		t.Errorf("queue not emptied, or not written as []: %s", got)
	}
	if !strings.Contains(logs.String(), "msg_id=bad-1") || !strings.Contains(logs.String(), "level=WARN") {
		t.Errorf("dropping the bad job was not logged with its msg_id:\n%s", logs.String())
	}
	if n, err := store.MoveQueued(t.Context(), f.me.Public(), f.ob); err != nil || n != 0 || len(f.ob.jobs) != 2 {
		t.Errorf("a second MoveQueued = %d, %v with %d in the outbox; want nothing more", n, err, len(f.ob.jobs))
	}
}

// A job queued by an earlier version that another key signed is never
// handed to the outbox, which would sign it again as this identity.
func TestMoveQueuedDropsAJobSignedByAnotherKey(t *testing.T) {
	f := newFixture(t)
	eve := testutil.NumberedSigner(t, 7)
	bob := testutil.NumberedSigner(t, 1)
	planted, err := RequestMessage(eve, bob.Public(), route.New(bob.Public().String(), "s"), "eve", "planted", route.New(eve.Public().String(), "e"), baseTime)
	if err != nil {
		t.Fatal(err)
	}
	m, err := planted.Msg.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, f.store.Path(), []byte(fmt.Sprintf(`{"inbound":[],"outbound":[],"queued":[{"route":%q,"msg":%s},%s]}`,
		planted.Route, m, jobJSON(t, f, "mine"))))
	if n, err := f.store.MoveQueued(t.Context(), f.me.Public(), f.ob); err != nil || n != 1 {
		t.Fatalf("MoveQueued = %d, %v; want 1", n, err)
	}
	if got := f.ob.ids(); !slices.Equal(got, []string{"mine"}) {
		t.Errorf("outbox holds %q, want only this side's job", got)
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
			if _, err := store.MoveQueued(t.Context(), testutil.NumberedSigner(t, 1).Public(), &memOutbox{}); !errors.Is(err, ErrCorrupt) {
				t.Errorf("MoveQueued error = %v, want ErrCorrupt", err)
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
	if len(st.Inbound)+len(st.Outbound)+len(st.queued) != 0 {
		t.Errorf("missing file loads as %+v, want the empty state", st)
	}
	if _, err := os.Stat(f.store.Path()); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Load or Open created the file (stat: %v)", err)
	}
	// A change that changes nothing does not create the file either.
	if _, err := f.store.Reject("x"); err != nil {
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
	// The queue earlier versions kept here stays an empty list, so that
	// they can still read the file.
	if q, ok := top["queued"].([]any); !ok || len(q) != 0 {
		t.Errorf("queued = %v, want an empty list", top["queued"])
	}
	// The lists and requests keep the declared key order, as other
	// implementations write them.
	if !bytes.Contains(data, []byte(`{"inbound":[{"key":`)) {
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
		st, err := decode(data, true)
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
		again, err := decode(enc, true)
		if err != nil {
			t.Fatalf("re-decoding %s: %v", enc, err)
		}
		if diff := cmp.Diff(st, again, cmpopts.EquateEmpty(), cmp.AllowUnexported(State{})); diff != "" {
			t.Errorf("round trip changed the state (-first +second):\n%s", diff)
		}
	})
}
