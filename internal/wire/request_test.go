package wire

import (
	"bytes"
	"encoding/json"
	"net/url"
	"strconv"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/interlink-go/interlink/internal/identity"
)

// The request encoders write what identity.Marshal writes of the request's
// fields, which is what clients sent before they shared these encoders:
// the bytes a relay receives do not depend on which client wrote them.
func FuzzRequestBodiesMatchMarshal(f *testing.F) {
	for _, s := range []struct{ route, key, payload string }{
		{"K#s", "K#s\x0000000000000000000001", `{"from":"a","text":"hi"}`},
		{"", "", "null"},
		{"<b>&amp;</b>#\u2028", "\x01\"\\", " [ 1 , {\"a\" : \"<>\"} ] "},
		{"\xff\xfe", "é\x00", `"\u00e9"`},
		{"K#s", "k", `{"a":1}{}`},
		{"K#s", "k", ``},
	} {
		f.Add(s.route, s.key, []byte(s.payload))
	}
	f.Fuzz(func(t *testing.T, route, key string, payload []byte) {
		want, werr := identity.Marshal(struct {
			To      string          `json:"to"`
			Payload json.RawMessage `json:"payload"`
		}{route, payload})
		got, err := SendBody(route, payload)
		if (err == nil) != (werr == nil) || !bytes.Equal(got, want) {
			t.Fatalf("SendBody(%q, %q) = %q, %v; identity.Marshal gives %q, %v", route, payload, got, err, want, werr)
		}
		if err == nil {
			if n := SendBodyLen(route, len(got)-len(`{"to":,"payload":}`)-len(identity.AppendString(nil, route))); n != len(got) {
				t.Fatalf("SendBodyLen = %d, the body has %d bytes", n, len(got))
			}
			if sent := AppendSend(nil, route, got[bytes.Index(got, []byte(`,"payload":`))+len(`,"payload":`):len(got)-1]); !bytes.Equal(sent, got) {
				t.Fatalf("AppendSend = %q, SendBody = %q", sent, got)
			}
		}

		want, werr = identity.Marshal(struct {
			Me  string `json:"me"`
			Ack string `json:"ack"`
		}{route, key})
		if werr != nil {
			t.Fatal(werr)
		}
		if got := AppendAck(nil, route, key); !bytes.Equal(got, want) {
			t.Fatalf("AppendAck(%q, %q) = %q; identity.Marshal gives %q", route, key, got, want)
		}

		wait := time.Duration(len(payload)) * time.Millisecond
		q := url.Values{"me": {route}, "timeout_ms": {strconv.FormatInt(wait.Milliseconds(), 10)}}
		if got, want := RecvTarget(route, wait), "/recv?"+q.Encode(); got != want {
			t.Fatalf("RecvTarget = %q; url.Values gives %q", got, want)
		}
	})
}

// What the encoders write, the bus's decoders read back as it was: the
// route and key (when valid UTF-8, which JSON can carry unchanged) and the
// payload as equal JSON.
func FuzzRequestBodiesDecodeBack(f *testing.F) {
	f.Add("K#s", "K#s\x0000000000000000000001", []byte(`{"text":"hi"}`))
	f.Add("a b", "\x00", []byte(`[1, 2.5e3, "\ud83d\ude00"]`))
	f.Fuzz(func(t *testing.T, route, key string, payload []byte) {
		body, err := SendBody(route, payload)
		if err != nil || !utf8.ValidString(route) {
			return
		}
		req, err := DecodeSend(body)
		switch {
		case CheckRoute(route) != nil || CheckJSON(payload) != nil:
			if err == nil && CheckRoute(route) != nil {
				t.Fatalf("DecodeSend took the invalid route %q", route)
			}
			return
		case err != nil:
			t.Fatalf("DecodeSend(%q): %v", body, err)
		case req.To != route:
			t.Fatalf("route %q came back as %q", route, req.To)
		case !jsonEqual(t, req.Payload, payload):
			t.Fatalf("payload %q came back as %q", payload, req.Payload)
		}
		if !utf8.ValidString(key) {
			return
		}
		ack, err := DecodeAck(AppendAck(nil, route, key))
		if err != nil || ack.Me != route || ack.Key != key {
			t.Fatalf("ack (%q, %q) came back as %+v, %v", route, key, ack, err)
		}
		q, err := DecodeRecvQuery(RecvTarget(route, 5*time.Second)[len("/recv?"):], time.Minute)
		if err != nil || q.Me != route || q.Wait != 5*time.Second {
			t.Fatalf("recv query for %q came back as %+v, %v", route, q, err)
		}
	})
}

// jsonEqual reports whether a and b decode to equal values.
func jsonEqual(t *testing.T, a, b []byte) bool {
	t.Helper()
	var va, vb any
	if err := json.Unmarshal(a, &va); err != nil {
		t.Fatalf("%q: %v", a, err)
	}
	if err := json.Unmarshal(b, &vb); err != nil {
		t.Fatalf("%q: %v", b, err)
	}
	ea, _ := json.Marshal(va)
	eb, _ := json.Marshal(vb)
	return bytes.Equal(ea, eb)
}

func TestSendBodyRefusesWhatIsNotJSON(t *testing.T) {
	for _, payload := range []string{``, `{`, `{"a":1}{}`, "\"\xff", `tru`} {
		if body, err := SendBody("K#s", []byte(payload)); err == nil {
			t.Errorf("SendBody took %q: %q", payload, body)
		}
	}
}

func TestParseMaxBody(t *testing.T) {
	for _, c := range []struct {
		value string
		limit int64
		ok    bool
	}{
		{"2097152", 2097152, true},
		{"1", 1, true},
		{"9223372036854775807", 9223372036854775807, true},
		{"", 0, false},
		{"0", 0, false},
		{"-5", 0, false},
		{"+5", 0, false},
		{" 5", 0, false},
		{"5k", 0, false},
		{"9223372036854775808", 0, false},
		{"00000000000000000001", 0, false}, // 20 digits
	} {
		h := make(map[string][]string)
		if c.value != "" {
			h[MaxBodyHeader] = []string{c.value}
		}
		limit, ok := ParseMaxBody(h)
		if limit != c.limit || ok != c.ok {
			t.Errorf("%q: %d, %v; want %d, %v", c.value, limit, ok, c.limit, c.ok)
		}
	}
}
