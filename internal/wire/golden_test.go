package wire

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rogpeppe/go-internal/txtar"
)

// The bus's golden exchanges (package bus, testdata/golden) hold the exact
// bytes of requests its clients send and of the answers it gives; its own
// test replays them against a bus. Here every request the bus takes and
// every answer in them is read with this package's decoders and written
// again with its encoders, which must give the same bytes: the encoders
// are the wire format those files pin down.
func TestGoldenBytesRoundTrip(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("..", "bus", "testdata", "golden", "*.txtar"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no golden files: %v", err)
	}
	seen := map[string]int{}
	for _, file := range files {
		ar, err := txtar.ParseFile(file)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range ar.Files {
			name := filepath.Base(file) + ":" + f.Name
			head, body, _ := strings.Cut(string(f.Data), "\n\n")
			body = strings.TrimSuffix(body, "\n")
			first, _, _ := strings.Cut(head, "\n")
			switch {
			case strings.HasSuffix(f.Name, ".request"):
				if kind := goldenRequest(t, name, first, []byte(body)); kind != "" {
					seen[kind]++
				}
			case strings.HasSuffix(f.Name, ".response") && body != "":
				seen[goldenAnswer(t, name, []byte(body))]++
			}
		}
	}
	// The files must keep exercising every encoder checked here.
	for _, kind := range []string{"send", "ack", "recv query", "timeout", "message", "error", "roster"} {
		if seen[kind] == 0 {
			t.Errorf("no %s in the golden files", kind)
		}
	}
}

// goldenRequest checks one request the bus takes and returns its kind, or
// "" for one it refuses or that is not checked here.
func goldenRequest(t *testing.T, name, line string, body []byte) string {
	t.Helper()
	method, target, _ := strings.Cut(line, " ")
	switch {
	case method == "POST" && target == "/send":
		req, err := DecodeSend(body)
		if err != nil || !twoMembers(body) {
			return ""
		}
		if got := AppendSend(nil, req.To, req.Payload); !bytes.Equal(got, body) {
			t.Errorf("%s: AppendSend gives\n%s\nthe file holds\n%s", name, got, body)
		}
		if n := SendBodyLen(req.To, len(req.Payload)); n != len(body) {
			t.Errorf("%s: SendBodyLen %d, the body has %d bytes", name, n, len(body))
		}
		return "send"
	case method == "POST" && target == "/ack":
		req, err := DecodeAck(body)
		if err != nil || !twoMembers(body) {
			return ""
		}
		if got := AppendAck(nil, req.Me, req.Key); !bytes.Equal(got, body) {
			t.Errorf("%s: AppendAck gives\n%s\nthe file holds\n%s", name, got, body)
		}
		return "ack"
	case method == "GET" && strings.HasPrefix(target, "/recv?"):
		q, err := DecodeRecvQuery(strings.TrimPrefix(target, "/recv?"), time.Hour)
		if err != nil || !strings.HasPrefix(target, "/recv?me=") {
			return ""
		}
		if got := RecvTarget(q.Me, q.Wait); got != target {
			t.Errorf("%s: RecvTarget gives %s, the file holds %s", name, got, target)
		}
		return "recv query"
	}
	return ""
}

// twoMembers reports whether body is an object of two members, as a
// client writes a /send or /ack body; the files also hold bodies the bus
// takes with members it ignores.
func twoMembers(body []byte) bool {
	var o map[string]json.RawMessage
	return json.Unmarshal(body, &o) == nil && len(o) == 2
}

// goldenAnswer checks one answer body and returns its kind.
func goldenAnswer(t *testing.T, name string, body []byte) string {
	t.Helper()
	var a struct {
		Status   *string
		Error    *string
		Ack      *string
		Envelope json.RawMessage
		Roster   []json.RawMessage
	}
	if err := json.Unmarshal(body, &a); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	var got []byte
	var kind string
	switch {
	case a.Error != nil:
		poll := a.Status != nil && *a.Status == "error"
		got, kind = ErrorAnswer(*a.Error, poll), "error"
		if poll {
			kind = "poll error"
		}
	case a.Status != nil && *a.Status == "timeout":
		got, kind = []byte(TimeoutAnswer), "timeout"
	case a.Status != nil && *a.Status == "ok":
		got, kind = []byte(HealthyAnswer), "health"
	case a.Ack != nil:
		var env struct {
			Payload json.RawMessage
			TS      int64
		}
		if err := json.Unmarshal(a.Envelope, &env); err != nil {
			t.Fatalf("%s: envelope: %v", name, err)
		}
		var err error
		if got, err = RecvMessage(*a.Ack, Envelope(env.Payload, env.TS)); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		want := env.Payload
		if string(want) == "null" {
			want = nil // as DecodeRecvAnswer gives a null payload
		}
		if r, err := DecodeRecvAnswer(body); err != nil || r.Ack != *a.Ack || !bytes.Equal(r.Payload, want) {
			t.Errorf("%s: DecodeRecvAnswer gives %+v, %v", name, r, err)
		}
		kind = "message"
	case a.Roster != nil:
		got, kind = goldenRoster(t, name, body), "roster"
	default:
		t.Fatalf("%s: an answer of no known shape: %s", name, body)
	}
	if !bytes.Equal(got, body) {
		t.Errorf("%s: the encoders give\n%s\nthe file holds\n%s", name, got, body)
	}
	return kind
}

// goldenRoster writes a /roster answer again from the elements of body.
func goldenRoster(t *testing.T, name string, body []byte) []byte {
	t.Helper()
	elems, err := RosterElements(body)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	out := []byte(RosterOpen)
	for i, e := range elems {
		rest, ok := bytes.CutPrefix(e, []byte(rosterAgePrefix))
		if !ok {
			t.Fatalf("%s: entry %s does not start with its age", name, e)
		}
		digits, fields, hasFields := bytes.Cut(rest[:len(rest)-1], []byte(","))
		age, err := strconv.ParseInt(string(digits), 10, 64)
		if err != nil {
			t.Fatalf("%s: age of %s: %v", name, e, err)
		}
		mark := len(out)
		out = AppendRosterEntryHead(out, i == 0, age, hasFields)
		out = append(out, fields...)
		out = append(out, RosterEntryClose...)
		if n := RosterEntryLen(i == 0, age, len(fields)); n != len(out)-mark {
			t.Errorf("%s: RosterEntryLen %d, the entry has %d bytes", name, n, len(out)-mark)
		}
	}
	return append(out, RosterClose...)
}
