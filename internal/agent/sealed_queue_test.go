package agent_test

import (
	"bytes"
	"encoding/json"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/interlink-go/interlink/internal/agent/agenttest"
	"github.com/interlink-go/interlink/internal/bus"
	"github.com/interlink-go/interlink/internal/identity"
	"github.com/interlink-go/interlink/internal/seal"
	"github.com/interlink-go/interlink/internal/store/bolt"
)

// startBoltBus serves a bus over plain HTTP on 127.0.0.1 with its queues
// in a bbolt file, and returns its URL and the store.
func startBoltBus(t *testing.T, path string) (string, *bolt.Store) {
	t.Helper()
	st, err := bolt.Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := bus.New(st, nil)
	var handlers sync.WaitGroup
	hs := bus.NewHTTPServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		handlers.Add(1)
		defer handlers.Done()
		srv.ServeHTTP(w, r)
	}), nil)
	served := make(chan struct{})
	go func() {
		defer close(served)
		_ = hs.Serve(bus.Listen(ln, nil))
	}()
	t.Cleanup(func() {
		srv.Shutdown()
		_ = hs.Close()
		<-served
		handlers.Wait()
		_ = st.Close()
	})
	return "http://" + ln.Addr().String(), st
}

// A message to a peer known to seal crosses a plain-HTTP relay and waits
// in its queue with no plaintext: the bytes on the TCP connection, the
// queued entry and the queue's file hold no text, msg_id, task fields or
// reply route, and no key naming them, though they do hold the route and
// the sealed box. The recipient, back later, opens and reads it.
func TestASealedMessageHasNoPlaintextOnAPlainHTTPWireNorInTheQueue(t *testing.T) {
	dbPath := filepath.Join(t.TempDir(), "queue.db")
	base, st := startBoltBus(t, dbPath)
	tp := startWireTap(t, strings.TrimPrefix(base, "http://"))
	tapped := "http://" + tp.ln.Addr().String()

	alice, bob := agenttest.Pair(t)
	bobRoot := t.TempDir()
	b := agenttest.Start(t, bob, "b1", []string{base}, &agenttest.Options{Root: bobRoot})
	agenttest.OnRoster(t, base, bob.Key(), "b1")
	a := agenttest.Start(t, alice, "a1", []string{tapped}, nil)
	// Alice learns from bob's announcement that he seals.
	a.OK("send_message", map[string]any{"to": "bob", "session": "b1", "text": "a first word"})
	b.WaitText("receive_messages", nil, "a first word")
	rt := bob.Key() + "#b1"
	agenttest.Eventually(t, "the first word acknowledged", func() bool {
		_, ok, err := st.Peek(rt)
		return err == nil && !ok
	})
	b.Stop() // away: what alice sends now waits in the queue

	text, task := "the vault combination is 31-4-15", "task-heron"
	id := agenttest.MsgID(t, a.OK("send_message", map[string]any{"to": "bob", "session": "b1", "text": text,
		"task_id": task, "status": "update"}))
	a.WaitText("message_status", map[string]any{"msg_id": id}, "[bus_accepted]")

	entry, ok, err := st.Peek(rt)
	if err != nil || !ok {
		t.Fatalf("bob's queue: %v %v", ok, err)
	}
	var queued struct {
		Payload json.RawMessage `json:"payload"`
	}
	if err := json.Unmarshal(entry.Value, &queued); err != nil {
		t.Fatalf("the queued entry %s: %v", entry.Value, err)
	}
	env, err := seal.ParseEnvelope(queued.Payload)
	if err != nil {
		t.Fatalf("the queued payload is not a sealed envelope (%v): %s", err, queued.Payload)
	}
	m, err := seal.OpenMessage(opener(t, bob), queued.Payload)
	if err != nil || m.Text != text || m.TaskID != task || m.MsgID != id {
		t.Fatalf("the queued envelope opens to %+v (%v)", m, err)
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(queued.Payload, &fields); err != nil {
		t.Fatal(err)
	}
	for k := range fields {
		if k != "from" && k != "to" && k != "ts" && k != "sealed" && k != "sig" {
			t.Errorf("the queued envelope has the key %q", k)
		}
	}

	db, err := os.ReadFile(dbPath)
	if err != nil {
		t.Fatal(err)
	}
	box := identity.EncodeBase64(env.Sealed)[:64]
	places := map[string][]byte{"the wire": tp.bytes(), "the queued entry": entry.Value, "the queue's file": db}
	for where, seen := range places {
		// Each place holds the message, sealed: the looking is real.
		if !bytes.Contains(seen, []byte(box)) {
			t.Fatalf("%s does not hold the sealed box", where)
		}
		// A route is what a relay must see, and "status" is also a key
		// of the bus's own answers: neither is looked for.
		for _, s := range []string{text, "vault", task, "heron", id, `"text"`, `"task_id"`, `"update"`,
			`"msg_id"`, `"reply_to"`, `"in_reply_to"`, `"kind"`} {
			if bytes.Contains(seen, []byte(s)) {
				t.Errorf("%s shows %q", where, s)
			}
		}
	}
	if !bytes.Contains(tp.bytes(), []byte("POST /send")) {
		t.Errorf("the tap did not see the plain HTTP request")
	}

	// Bob, back, reads it and acknowledges it.
	b2 := agenttest.Start(t, bob, "b1", []string{base}, &agenttest.Options{Root: bobRoot})
	b2.WaitText("receive_messages", nil, text)
	agenttest.Eventually(t, "bob's queue acknowledged", func() bool {
		_, ok, err := st.Peek(rt)
		return err == nil && !ok
	})
}
