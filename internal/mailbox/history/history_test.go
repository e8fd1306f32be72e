package history

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/interlink-go/interlink/internal/identity"
	"github.com/interlink-go/interlink/internal/protocol"
	"github.com/interlink-go/interlink/internal/testutil"
)

// states are the states the tests let a line carry.
var states = []string{"receiver_stored", "receiver_acknowledged"}

func newLog(tb testing.TB, dir string) *Log {
	tb.Helper()
	return New(dir, func(s string) bool { return slices.Contains(states, s) }, slog.New(slog.DiscardHandler))
}

var base = time.UnixMilli(1_700_000_000_000)

// line returns a signed message from s with msg_id id at ts, as a line
// in state acknowledged, arrived under petname peer.
func line(tb testing.TB, s *identity.Signer, id, peer string, ts time.Time) Line {
	tb.Helper()
	m := identity.Message{To: testutil.NumberedSigner(tb, 99).Public().String(), Text: "text of " + id,
		TS: identity.Millis(ts), MsgID: id, Kind: identity.KindMessage}
	if err := s.SignMessage(&m); err != nil {
		tb.Fatal(err)
	}
	return Line{Message: m, Peer: peer, State: "receiver_acknowledged"}
}

// What is added is read back, by another view of the folder too, with
// its petname and state, once per message however often it is added.
func TestAddedLinesReadBack(t *testing.T) {
	dir := t.TempDir()
	alice := testutil.NumberedSigner(t, 1)
	now := identity.Millis(base)
	h := newLog(t, dir)
	a, b := line(t, alice, "a", "alice", base), line(t, alice, "b", "alice", base.Add(time.Second))
	b.SupersededBy = "c"
	if err := h.Add([]Line{a, b, a}, now); err != nil {
		t.Fatal(err)
	}
	if err := h.Add([]Line{b}, now); err != nil {
		t.Fatal(err)
	}
	other := newLog(t, dir)
	if err := other.Refresh(now); err != nil {
		t.Fatal(err)
	}
	n := 0
	for k, e := range other.Entries() {
		n++
		got, ok, err := other.Read(k, e)
		if err != nil || !ok {
			t.Fatalf("Read(%v) = %v, %v", k, ok, err)
		}
		want := a
		if k.MsgID == "b" {
			want = b
		}
		if got.Message.Text != want.Message.Text || got.Peer != "alice" || got.State != want.State || got.SupersededBy != want.SupersededBy {
			t.Errorf("Read(%v) = %+v, want %+v", k, got, want)
		}
	}
	if n != 2 {
		t.Errorf("%d entries, want 2", n)
	}
	ea, _ := other.Entry(Key{alice.Public().String(), "a"})
	eb, _ := other.Entry(Key{alice.Public().String(), "b"})
	if ea.Seq >= eb.Seq || ea.Day != Day(a.Message.TS) {
		t.Errorf("entries %+v and %+v out of order or on the wrong day", ea, eb)
	}
}

// A sender that reaches its share of a day gets a marker, once, and the
// text of its further messages that day is not kept; another sender's
// share is its own.
func TestASenderBeyondItsShareOfADayIsNotKept(t *testing.T) {
	h := newLog(t, t.TempDir())
	alice, bob := testutil.NumberedSigner(t, 1), testutil.NumberedSigner(t, 2)
	now := identity.Millis(base)
	lines := make([]Line, 0, MaxLines+2)
	for i := range MaxLines + 2 {
		lines = append(lines, line(t, alice, fmt.Sprint("m", i), "alice", base))
	}
	lines = append(lines, line(t, bob, "b", "bob", base))
	if err := h.Add(lines, now); err != nil {
		t.Fatal(err)
	}
	if _, ok := h.Entry(Key{alice.Public().String(), fmt.Sprint("m", MaxLines)}); ok {
		t.Error("a message beyond the share is kept")
	}
	if !h.Full(alice.Public().String(), now) || h.Full(bob.Public().String(), now) {
		t.Error("Full does not tell alice's day from bob's")
	}
	if got := h.FullDays("alice"); !slices.Equal(got, []string{Day(now)}) {
		t.Errorf("FullDays(alice) = %v", got)
	}
	if _, ok := h.Entry(Key{bob.Public().String(), "b"}); !ok {
		t.Error("bob's message is not kept")
	}
}

// A day's file goes once every message it can hold has left the replay
// window, and only then.
func TestADayLeavesWithTheReplayWindow(t *testing.T) {
	dir := t.TempDir()
	h := newLog(t, dir)
	alice := testutil.NumberedSigner(t, 1)
	l := line(t, alice, "a", "alice", base)
	if err := h.Add([]Line{l}, identity.Millis(base)); err != nil {
		t.Fatal(err)
	}
	end, ok := DayEnd(Day(l.Message.TS))
	if !ok {
		t.Fatal("DayEnd refuses the day's name")
	}
	path := filepath.Join(dir, Day(l.Message.TS)+".jsonl")
	window := uint64(protocol.MaxPast.Milliseconds())
	if err := h.Refresh(end - 1 + window); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); err != nil {
		t.Errorf("the file went while its day was inside the window: %v", err)
	}
	if err := h.Refresh(end + window); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Errorf("the file stayed after its day left the window: %v", err)
	}
	if _, ok := h.Entry(Key{alice.Public().String(), "a"}); ok {
		t.Error("the view kept an entry of a removed file")
	}
}

// A history line decodes without panicking, or not at all; what decodes
// is written back by the encoder the history uses and decodes to the same
// line.
func FuzzDecodeHistLine(f *testing.F) {
	f.Add([]byte(`{"sender":"A","msg_id":"m1","ts":1700000000000,"peer":"alice","state":"receiver_acknowledged","message":` + `{"from":"A","to":"B","text":"hi","ts":1700000000000,"msg_id":"m1","kind":"message","sig":"S"}` + `}`))
	f.Add([]byte(`{"sender":"A","msg_id":"u1","ts":1,"peer":"","state":"receiver_stored","superseded_by":"u2","message":{"text":"<i>"}}`))
	f.Add([]byte(`{"sender":"A","msg_id":"m9","ts":5,"peer":"alice","not_kept":true}`))
	f.Add([]byte("{\"sender\":\"A\",\"msg_id\":\"m2\",\"ts\":2,\"peer\":\"b\",\"state\":\"receiver_stored\",\"message\":{\"text\":\n\"x\"}}"))
	f.Add([]byte(`{"sender":"A","msg_id":"m1","ts":-1,"peer":"alice","state":"nope","message":null}`))

	f.Fuzz(func(t *testing.T, line []byte) {
		h := newLog(t, t.TempDir())
		l, err := h.decode(line)
		if err != nil {
			return
		}
		r := Line{Message: identity.Message{From: l.sender, MsgID: l.msgID, TS: l.ts}, Peer: l.peer,
			State: l.state, SupersededBy: l.supersededBy, Raw: l.message}
		var out []byte
		if l.full {
			out = appendMarker(nil, &r)
		} else if out, err = AppendLine(nil, &r); err != nil {
			t.Fatalf("encode: %v", err)
		}
		if len(out) == 0 || out[len(out)-1] != '\n' || strings.Count(string(out), "\n") != 1 {
			t.Fatalf("encoded line %q is not one line", out)
		}
		l2, err := h.decode(out[:len(out)-1])
		if err != nil {
			t.Fatalf("re-decode of %s: %v", out, err)
		}
		// The message is written back compact when it held a line break.
		for _, m := range []*json.RawMessage{&l.message, &l2.message} {
			var buf bytes.Buffer
			if len(*m) > 0 {
				if err := json.Compact(&buf, *m); err != nil {
					t.Fatalf("compact %s: %v", *m, err)
				}
				*m = buf.Bytes()
			}
		}
		if diff := cmp.Diff(l, l2, cmp.AllowUnexported(histLine{})); diff != "" {
			t.Fatalf("decode→encode→decode differs (-first +second):\n%s", diff)
		}
	})
}
