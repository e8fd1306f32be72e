package mailbox

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/interlink-go/interlink/internal/identity"
)

// validMessage is a message as the file stores it.
const validMessage = `{"from":"A","to":"B","text":"hi","ts":1700000000000,"msg_id":"m1","kind":"message","sig":"S"}`

func TestFileShape(t *testing.T) {
	f := newFixture(t)
	f.retain(t, msg{id: "u1", task: "t", status: identity.StatusUpdate})
	f.retain(t, msg{id: "u2", task: "t", status: identity.StatusUpdate})
	f.retain(t, msg{id: "q", status: identity.StatusNeedsInput})
	n := f.reserve(t)

	data, err := os.ReadFile(f.mb.Path())
	if err != nil {
		t.Fatal(err)
	}
	var top map[string]any
	if err := json.Unmarshal(data, &top); err != nil {
		t.Fatal(err)
	}
	keysOf := func(m map[string]any) []string {
		var ks []string
		for k := range m {
			ks = append(ks, k)
		}
		slices.Sort(ks)
		return ks
	}
	if diff := cmp.Diff([]string{"notice", "records"}, keysOf(top)); diff != "" {
		t.Errorf("top-level keys (-want +got):\n%s", diff)
	}
	// u1 was superseded by u2: it is a line of the tombstone log beside
	// the file, without its text.
	logData, err := os.ReadFile(strings.TrimSuffix(f.mb.Path(), ".json") + ".tombstones.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(string(logData), "\n"), "\n")
	if len(lines) != 1 {
		t.Fatalf("tombstone log %q, want one line", logData)
	}
	var tomb map[string]any
	if err := json.Unmarshal([]byte(lines[0]), &tomb); err != nil {
		t.Fatal(err)
	}
	wantTomb := map[string]any{
		"sender": f.alice.Public().String(), "msg_id": "u1", "ts": float64(identity.Millis(baseTime)),
		"superseded_by": "u2", "task_id": "t", "status": "update", "reply_to": "",
	}
	if diff := cmp.Diff(wantTomb, tomb); diff != "" {
		t.Errorf("tombstone (-want +got):\n%s", diff)
	}
	recs := top["records"].([]any)
	if len(recs) != 2 {
		t.Fatalf("%d records, want 2", len(recs))
	}
	for i, r := range recs {
		rec := r.(map[string]any)
		if diff := cmp.Diff([]string{"message", "peer", "state", "superseded_by"}, keysOf(rec)); diff != "" {
			t.Errorf("record %d keys (-want +got):\n%s", i, diff)
		}
		if rec["peer"] != "alice" || rec["state"] != "receiver_stored" {
			t.Errorf("record %d: peer %v state %v", i, rec["peer"], rec["state"])
		}
		if _, ok := rec["message"].(map[string]any)["msg_id"]; !ok {
			t.Errorf("record %d: message has no msg_id", i)
		}
	}
	if got, ok := recs[0].(map[string]any)["superseded_by"]; !ok || got != nil {
		t.Errorf("u2 superseded_by = %v, want null", got)
	}
	notice := top["notice"].(map[string]any)
	if diff := cmp.Diff([]string{"attempt", "id", "messages", "retry_at", "state"}, keysOf(notice)); diff != "" {
		t.Errorf("notice keys (-want +got):\n%s", diff)
	}
	wantNotice := map[string]any{
		"id": n.ID, "state": "preparing", "attempt": float64(0), "retry_at": float64(n.RetryAt),
		"messages": []any{[]any{f.alice.Public().String(), "q"}},
	}
	if diff := cmp.Diff(wantNotice, notice); diff != "" {
		t.Errorf("notice (-want +got):\n%s", diff)
	}

	// With no notice the key is present and null.
	f.mb.Acknowledge([]Receipt{n.Messages[0]})
	data, _ = os.ReadFile(f.mb.Path())
	top = nil
	json.Unmarshal(data, &top)
	if v, ok := top["notice"]; !ok || v != nil {
		t.Errorf("notice = %v (present %v), want null", v, ok)
	}
}

func TestLegacyNoticeWithoutRetryAtLoads(t *testing.T) {
	f := newFixture(t)
	m := f.message(t, msg{id: "q", status: identity.StatusNeedsInput})
	mj, _ := json.Marshal(m)
	legacy := `{"records":[{"message":` + string(mj) + `,"peer":"alice","state":"host_queued","superseded_by":null}],` +
		`"notice":{"id":"0badc0de","state":"host_queued","messages":[["` + m.From + `","q"]]}}`
	if err := os.MkdirAll(filepath.Dir(f.mb.Path()), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(f.mb.Path(), []byte(legacy), 0o600); err != nil {
		t.Fatal(err)
	}
	n := f.notice(t)
	if n == nil || n.RetryAt != 0 || n.Attempt != 0 || n.ID != "0badc0de" {
		t.Fatalf("legacy notice = %+v", n)
	}
	// An expiry of 0 has long passed: a new notice is issued.
	next := f.reserve(t)
	if next == nil || next.ID == "0badc0de" || next.Attempt != 1 {
		t.Fatalf("Reserve over a legacy notice = %+v, want a new attempt-1 notice", next)
	}
}

func TestCorruptFileIsErrorAndUntouched(t *testing.T) {
	rec := func(fields string) string {
		return `{"records":[{"message":` + validMessage + fields + `}],"notice":null}`
	}
	tests := []struct {
		name, data string
	}{
		{"not json", `{"records":[`},
		{"empty file", ``},
		{"null", `null`},
		{"array", `[]`},
		{"missing records", `{"notice":null}`},
		{"null records", `{"records":null,"notice":null}`},
		{"records not a list", `{"records":{},"notice":null}`},
		{"record not an object", `{"records":[1],"notice":null}`},
		{"bad message", `{"records":[{"message":{"from":"A"},"peer":"p","state":"receiver_stored","superseded_by":null}]}`},
		{"missing message", `{"records":[{"peer":"p","state":"receiver_stored"}]}`},
		{"missing peer", rec(`,"state":"receiver_stored","superseded_by":null`)},
		{"unknown state", rec(`,"peer":"p","state":"eaten","superseded_by":null`)},
		{"preparing record", rec(`,"peer":"p","state":"preparing","superseded_by":null`)},
		{"superseded_by number", rec(`,"peer":"p","state":"receiver_stored","superseded_by":7`)},
		{"notice not an object", `{"records":[],"notice":"x"}`},
		{"notice missing id", `{"records":[],"notice":{"state":"preparing","messages":[]}}`},
		{"notice bad state", `{"records":[],"notice":{"id":"a","state":"receiver_stored","messages":[]}}`},
		{"notice bad pair", `{"records":[],"notice":{"id":"a","state":"preparing","messages":[["a"]]}}`},
		{"notice pair of numbers", `{"records":[],"notice":{"id":"a","state":"preparing","messages":[[1,2]]}}`},
		{"negative retry_at", `{"records":[],"notice":{"id":"a","state":"preparing","messages":[],"retry_at":-1}}`},
		{"fractional attempt", `{"records":[],"notice":{"id":"a","state":"preparing","messages":[],"attempt":1.5}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t)
			if err := os.MkdirAll(filepath.Dir(f.mb.Path()), 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(f.mb.Path(), []byte(tt.data), 0o600); err != nil {
				t.Fatal(err)
			}
			m := f.message(t, msg{id: "m1"})
			ops := map[string]func() error{
				"Retain":      func() error { _, err := f.mb.Retain(bg, m, "alice"); return err },
				"Receive":     func() error { _, err := f.mb.Receive(0); return err },
				"Records":     func() error { _, err := f.mb.Records(); return err },
				"Acknowledge": func() error { _, err := f.mb.Acknowledge([]Receipt{receipt(m)}); return err },
				"History":     func() error { _, err := f.mb.History("alice", 0, true); return err },
				"Reserve":     func() error { _, err := f.mb.Reserve(bg); return err },
				"Finish":      func() error { _, err := f.mb.Finish(bg, "a", StateHostQueued); return err },
			}
			for name, op := range ops {
				if err := op(); !errors.Is(err, ErrCorrupt) {
					t.Errorf("%s = %v, want ErrCorrupt", name, err)
				}
			}
			data, _ := os.ReadFile(f.mb.Path())
			if string(data) != tt.data {
				t.Errorf("corrupt file was rewritten to %q", data)
			}
		})
	}
}

func TestDecodeAcceptsLenientForms(t *testing.T) {
	for _, data := range []string{
		`{"records":[]}`,
		`{"records":[],"notice":null,"future":1}`,
		`{"records":[{"message":` + validMessage + `,"peer":"p","state":"inbox_queued"}]}`,
	} {
		if _, err := decode([]byte(data), true); err != nil {
			t.Errorf("decode(%s) = %v", data, err)
		}
	}
}

func FuzzDecode(f *testing.F) {
	f.Add([]byte(`{"records":[],"notice":null}`))
	f.Add([]byte(`{"records":[{"message":` + validMessage + `,"peer":"alice","state":"receiver_stored","superseded_by":"m2"}],` +
		`"notice":{"id":"0a1b2c3d","state":"host_queued","messages":[["A","m1"]],"retry_at":1700000030000,"attempt":4}}`))
	f.Add([]byte(`{"records":[],"notice":{"id":"x","state":"preparing","messages":[]}}`))
	f.Add([]byte(`{"records":[{"message":{"from":"A","to":"B","text":"<i>","ts":1,"msg_id":"","sig":"","status":"update","task_id":"t"},"peer":"","state":"receiver_acknowledged","superseded_by":""}]}`))

	f.Fuzz(func(t *testing.T, data []byte) {
		d, err := decode(data, true)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("error %v does not wrap ErrCorrupt", err)
			}
			return
		}
		recs, _, err := encodeRecords(d.records)
		if err != nil {
			t.Fatalf("encode records: %v", err)
		}
		out, err := encode(recs, d.notice)
		if err != nil {
			t.Fatalf("encode: %v", err)
		}
		d2, err := decode(out, true)
		if err != nil {
			t.Fatalf("re-decode of %s: %v", out, err)
		}
		// What an earlier shape kept as consumed records is not written
		// back into the file: it moves to the tombstone log.
		d.legacy = nil
		// A record's stored message bytes are written back as they are,
		// so only the decoded fields are compared.
		opts := []cmp.Option{cmp.AllowUnexported(document{}), cmpopts.IgnoreUnexported(Record{}), cmpopts.EquateEmpty()}
		if diff := cmp.Diff(d, d2, opts...); diff != "" {
			t.Fatalf("decode→encode→decode differs (-first +second):\n%s", diff)
		}
	})
}
