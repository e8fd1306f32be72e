package wire

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/interlink-go/interlink/internal/identity"
)

// The fast paths must give exactly what the general decoders give: the
// same request, or the same error. These targets run both on one input.

// outcome renders a decoder's result for comparison.
func outcome(v any, err error) string {
	if err != nil {
		return "error: " + err.Error()
	}
	return fmt.Sprintf("%#v", v)
}

func FuzzFastBodyDecodersMatch(f *testing.F) {
	for _, seed := range []string{
		`{"to":"K#s","payload":{"text":"hi"}}`,
		` { "payload" : [1,{"a":"}"}] , "to" : "K\u0023s" , "to":"x" } `,
		`{"t\u006f":"K#s","payload":1}`,
		`{"to":7,"payload":1}`,
		`{"me":"K#s","ack":"K#s\u000000000000000000000001"}`,
		`{"me":"K\ud83d\ude00","ack":"\"\\\/\b\f\n\r\t"}`,
		`{"me":"K\u0000","ack":""}`,
		`[1]`, `null`, `{}`, `{"to":"a","payload":true}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		fastS, errS := DecodeSend(body)
		slowS, errS2 := decodeSendSlow(body)
		if a, b := outcome(fastS, errS), outcome(slowS, errS2); a != b {
			t.Fatalf("send %q:\nfast    %s\ngeneral %s", body, a, b)
		}
		fastA, errA := DecodeAck(body)
		slowA, errA2 := decodeAckSlow(body)
		if a, b := outcome(fastA, errA), outcome(slowA, errA2); a != b {
			t.Fatalf("ack %q:\nfast    %s\ngeneral %s", body, a, b)
		}
	})
}

func FuzzFastRecvQueryMatches(f *testing.F) {
	for _, seed := range []string{
		"me=K%23s&timeout_ms=0", "timeout_ms=25000&me=K%23s", "me=a+b", "me=K&me=K",
		"me=K;timeout_ms=1", "m%65=K", "me=K&timeout_ms=%31", "me=K&timeout_ms=+1",
		"me=K&timeout_ms=", "me=K&&timeout_ms=1", "me", "me=%zz", "me=K&x=1",
		"me=K&timeout_ms=18446744073709551615", "me=%00",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		for _, limit := range []time.Duration{120 * time.Second, time.Millisecond} {
			fast, err := DecodeRecvQuery(raw, limit)
			slow, err2 := decodeRecvQuerySlow(raw, limit)
			if a, b := outcome(fast, err), outcome(slow, err2); a != b {
				t.Fatalf("query %q, limit %v:\nfast    %s\ngeneral %s", raw, limit, a, b)
			}
		}
	})
}

// The ack key in a /recv answer is the JSON string identity.Marshal makes,
// whether the fast encoder or identity.Marshal writes it.
func TestAckKeyEncodingMatchesMarshal(t *testing.T) {
	keys := []string{
		"K#s\x0000000000000000000001",
		"",
		"route with spaces~\x7f\x0000000000000000000002",
		`quote"back\slash` + "\x00" + "1",
		"<html>&amp;\x001",
		"\u00e9t\u00e9\x001",
		"\u2028\x001",
		"\x01\x1f",
		string([]byte{0xff, 0xfe}),
	}
	for _, k := range keys {
		want, err := identity.Marshal(k)
		if err != nil {
			t.Fatal(err)
		}
		got, ok := appendKeyJSON([]byte("prefix"), k)
		// Keys of printable ASCII and NULs are the fast encoder's; it
		// refuses the rest, which RecvMessage hands to identity.Marshal.
		plain := !strings.ContainsFunc(k, func(r rune) bool {
			return r != 0 && (r < 0x20 || r >= 0x80 || r == '"' || r == '\\')
		})
		if ok != plain {
			t.Errorf("key %q: fast encoder took it: %v, want %v", k, ok, plain)
		}
		if !ok {
			continue
		}
		if string(got) != "prefix"+string(want) {
			t.Errorf("key %q: fast %s, identity.Marshal %s", k, got[len("prefix"):], want)
		}
		var back string
		if err := json.Unmarshal(got[len("prefix"):], &back); err != nil || back != k {
			t.Errorf("key %q does not decode back: %q, %v", k, back, err)
		}
	}
}
