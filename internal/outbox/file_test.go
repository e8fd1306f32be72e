package outbox

import (
	"bytes"
	"encoding/json"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// FuzzDecode: decoding never panics, every failure is ErrCorrupt, and a
// decoded file encodes to a file that decodes to the same entries.
func FuzzDecode(f *testing.F) {
	f.Add([]byte(`{"messages":[]}`))
	f.Add([]byte(`{"messages":[{"msg_id":"a","route":"k#s","peer":"bob","text":"hi","ts":1,"queued_at":2,"state":"pending","attempts":0,"message":{"from":"A","to":"B","text":"hi","ts":1,"msg_id":"a","sig":"S"}}]}`))
	f.Add([]byte(`{"messages":[{"msg_id":"a","route":"k#s","peer":"bob","text":"hi","ts":1,"state":"bus_accepted","attempts":1,"accepted_by":["http://r"],"finished_at":3}]}`))
	f.Add([]byte(`{"messages":[{"msg_id":"a","route":"k#s","state":"rejected","last_error":"HTTP 413"},{"msg_id":"a","route":"k#s","state":"expired"}]}`))
	f.Add([]byte(`{"messages":null}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		d, err := decode(data, true)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("error %v is not ErrCorrupt", err)
			}
			return
		}
		enc := encode(&d)
		d2, err := decode(enc, true)
		if err != nil {
			t.Fatalf("re-decode: %v\n%s", err, enc)
		}
		if len(d.entries) != len(d2.entries) {
			t.Fatalf("%d entries, then %d", len(d.entries), len(d2.entries))
		}
		for i := range d.entries {
			if diff := cmp.Diff(d.entries[i].Entry, d2.entries[i].Entry); diff != "" {
				t.Fatalf("entry %d (-first +second):\n%s", i, diff)
			}
			var a, b bytes.Buffer
			_ = compactJSON(&a, d.entries[i].raw)
			_ = compactJSON(&b, d2.entries[i].raw)
			if !bytes.Equal(a.Bytes(), b.Bytes()) {
				t.Fatalf("entry %d message %s, then %s", i, d.entries[i].raw, d2.entries[i].raw)
			}
		}
	})
}

// compactJSON writes src without insignificant space; nil stays empty.
func compactJSON(dst *bytes.Buffer, src []byte) error {
	if len(src) == 0 {
		return nil
	}
	return json.Compact(dst, src)
}
