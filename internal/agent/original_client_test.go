package agent_test

import (
	"bytes"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/interlink-go/interlink/internal/agent"
	"github.com/interlink-go/interlink/internal/agent/agenttest"
	"github.com/interlink-go/interlink/internal/bus"
	"github.com/interlink-go/interlink/internal/bus/bustest"
)

// This file holds a client of the original's format written from the
// wire description alone, without this module's identity, relay or wire
// packages: its own signing encoding, checked against the published
// vectors, plain unsigned HTTP bodies, and its own verifier.

// origSigningBytes is the canonical message encoding under the domain
// "interlink-v2\x00": both raw keys, u64le(ts), then kind, msg_id, text,
// status, task_id and in_reply_to, each with a u32le length prefix.
func origSigningBytes(from, to []byte, ts uint64, kind, msgID, text, status, taskID, inReplyTo string) []byte {
	b := append([]byte("interlink-v2\x00"), from...)
	b = append(b, to...)
	b = binary.LittleEndian.AppendUint64(b, ts)
	for _, s := range []string{kind, msgID, text, status, taskID, inReplyTo} {
		b = binary.LittleEndian.AppendUint32(b, uint32(len(s)))
		b = append(b, s...)
	}
	return b
}

var b64 = base64.RawURLEncoding

// origKey is a key pair of the original's client.
type origKey struct {
	priv ed25519.PrivateKey
	pub  string // base64url, no padding
}

func newOrigKey(seed []byte) origKey {
	priv := ed25519.NewKeyFromSeed(seed)
	return origKey{priv: priv, pub: b64.EncodeToString(priv.Public().(ed25519.PublicKey))}
}

// message returns a signed message as the original posts it: a JSON
// object (encoding/json writes a map's keys sorted, as the original's
// generic JSON value does), kind always present, empty optional fields
// left out, reply_to unsigned.
func (k origKey) message(tb testing.TB, to string, ts uint64, kind, msgID, text, replyTo string) map[string]any {
	tb.Helper()
	toRaw, err := b64.DecodeString(to)
	if err != nil {
		tb.Fatal(err)
	}
	sig := ed25519.Sign(k.priv, origSigningBytes(k.priv.Public().(ed25519.PublicKey), toRaw, ts, kind, msgID, text, "", "", ""))
	m := map[string]any{"from": k.pub, "to": to, "ts": ts, "kind": kind, "msg_id": msgID, "text": text, "sig": b64.EncodeToString(sig)}
	if replyTo != "" {
		m["reply_to"] = replyTo
	}
	return m
}

// smallOrder lists the encodings of points of small order, canonical and
// not, which the original's strict verification refuses as key or R.
var smallOrder = func() map[string]bool {
	m := map[string]bool{}
	for _, h := range []string{
		"0100000000000000000000000000000000000000000000000000000000000000",
		"ecffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f",
		"0000000000000000000000000000000000000000000000000000000000000000",
		"0000000000000000000000000000000000000000000000000000000000000080",
		"26e8958fc2b227b045c3f489f2ef98f0d5dfac05d3c63339b13802886d53fc05",
		"26e8958fc2b227b045c3f489f2ef98f0d5dfac05d3c63339b13802886d53fc85",
		"c7176a703d4dd84fba3c0b760d10670f2a2053fa2c39ccc64ec7fd7792ac037a",
		"c7176a703d4dd84fba3c0b760d10670f2a2053fa2c39ccc64ec7fd7792ac03fa",
		"0100000000000000000000000000000000000000000000000000000000000080",
		"ecffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff",
		"edffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f",
		"edffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff",
		"eeffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f",
		"eeffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff",
	} {
		m[h] = true
	}
	return m
}()

// origVerify checks a payload as the original's receiver does: required
// fields of the right types, kind and status in their enums, both keys
// and the signature decoded strictly, the canonical bytes verified under
// from. It returns the decoded fields.
func origVerify(payload []byte) (map[string]any, error) {
	dec := json.NewDecoder(bytes.NewReader(payload))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil {
		return nil, err
	}
	str := func(k string, required bool) (string, error) {
		v, ok := m[k]
		if !ok || v == nil {
			if required {
				return "", fmt.Errorf("missing %s", k)
			}
			return "", nil
		}
		s, ok := v.(string)
		if !ok {
			return "", fmt.Errorf("%s is not a string", k)
		}
		return s, nil
	}
	var f [9]string
	for i, k := range []string{"from", "to", "text", "msg_id", "sig", "kind", "status", "task_id", "in_reply_to"} {
		s, err := str(k, i < 5)
		if err != nil {
			return nil, err
		}
		f[i] = s
	}
	from, to, text, msgID, sigText, kind, status, taskID, inReplyTo := f[0], f[1], f[2], f[3], f[4], f[5], f[6], f[7], f[8]
	if _, ok := m["kind"]; !ok {
		kind = "message"
	}
	switch kind {
	case "message", "pair_request", "pair_accept":
	default:
		return nil, fmt.Errorf("kind %q", kind)
	}
	switch status {
	case "", "update", "needs_input", "result", "failed", "canceled":
	default:
		return nil, fmt.Errorf("status %q", status)
	}
	n, ok := m["ts"].(json.Number)
	if !ok {
		return nil, fmt.Errorf("ts is not a number")
	}
	ts, err := strconv.ParseUint(n.String(), 10, 64)
	if err != nil {
		return nil, fmt.Errorf("ts: %w", err)
	}
	fromRaw, err1 := b64.Strict().DecodeString(from)
	toRaw, err2 := b64.Strict().DecodeString(to)
	sig, err3 := b64.Strict().DecodeString(sigText)
	if err1 != nil || err2 != nil || err3 != nil || len(fromRaw) != 32 || len(toRaw) != 32 || len(sig) != 64 {
		return nil, fmt.Errorf("bad key or signature encoding")
	}
	if smallOrder[hex.EncodeToString(fromRaw)] || smallOrder[hex.EncodeToString(sig[:32])] {
		return nil, fmt.Errorf("small-order key or R")
	}
	if !ed25519.Verify(fromRaw, origSigningBytes(fromRaw, toRaw, ts, kind, msgID, text, status, taskID, inReplyTo), sig) {
		return nil, fmt.Errorf("signature does not verify")
	}
	return m, nil
}

// The encoder reproduces the published worked examples byte for byte,
// signatures included, and the verifier takes them and refuses a changed
// byte.
func TestOriginalClientEncoderMatchesTheVectors(t *testing.T) {
	alice := newOrigKey(make([]byte, 32))
	bobSeed, _ := hex.DecodeString("9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60")
	bob := newOrigKey(bobSeed)
	if alice.pub != "O2onvM62pC1io6jQKm8Nc2UyFXcd4kOmOsBIoYtZ2ik" || bob.pub != "11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo" {
		t.Fatalf("keys %s %s", alice.pub, bob.pub)
	}
	a, b := []byte(alice.priv.Public().(ed25519.PublicKey)), []byte(bob.priv.Public().(ed25519.PublicKey))
	const ts = 1700000000000
	tests := []struct {
		name    string
		signer  origKey
		bytes   []byte
		wantHex string
		wantSig string
	}{
		{"A", alice, origSigningBytes(a, b, ts, "message", "m1", "hi", "", "", ""),
			"696e7465726c696e6b2d7632003b6a27bcceb6a42d62a3a8d02a6f0d73653215771de243a63ac048a18b59da29d75a98" +
				"0182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a0068e5cf8b010000070000006d657373616765" +
				"020000006d31020000006869000000000000000000000000",
			"QZU9rxq3SyVhWEJhhEwZnCfSbc91ynguPLThpnWZobLxaC4S6eT04dSB-dfVPon8jC_ZIZYJtS3_sN6AtpuBAw"},
		{"B", alice, origSigningBytes(a, b, ts, "message", "m2", "on it", "update", "t1", "q1"),
			"696e7465726c696e6b2d7632003b6a27bcceb6a42d62a3a8d02a6f0d73653215771de243a63ac048a18b59da29d75a98" +
				"0182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a0068e5cf8b010000070000006d657373616765" +
				"020000006d32050000006f6e20697406000000757064617465020000007431020000007131",
			"SBwqH2D3pvJU3Mc6cAlHn4VDGQ25Gbx9OE-WStWKZlChtw-217UFCBP8-PbvkiZh07Ab8ebWIa7ON3pwhlzYDw"},
		{"C", bob, origSigningBytes(b, a, ts, "pair_accept", "a1", "bob", "", "", "k1"),
			"696e7465726c696e6b2d763200d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a3b6a27" +
				"bcceb6a42d62a3a8d02a6f0d73653215771de243a63ac048a18b59da290068e5cf8b0100000b000000706169725f6163" +
				"6365707402000000613103000000626f620000000000000000020000006b31",
			"cXdmtAuSxqMkQ-gtdXUNEJNqSQUCOSWu28Vm21WaLGi3fIqVz_e0EBhRTRVVLQxXaKP2ilmdFKf0WOlb-0jwAA"},
	}
	for _, tt := range tests {
		if got := hex.EncodeToString(tt.bytes); got != tt.wantHex {
			t.Errorf("example %s: bytes\n%s\nwant\n%s", tt.name, got, tt.wantHex)
		}
		if got := b64.EncodeToString(ed25519.Sign(tt.signer.priv, tt.bytes)); got != tt.wantSig {
			t.Errorf("example %s: signature %s, want %s", tt.name, got, tt.wantSig)
		}
	}
	// The wire form of example A, as it reaches Bob through the broker.
	wireA := `{"from":"O2onvM62pC1io6jQKm8Nc2UyFXcd4kOmOsBIoYtZ2ik","kind":"message","msg_id":"m1","reply_to":"O2onvM62pC1io6jQKm8Nc2UyFXcd4kOmOsBIoYtZ2ik#s1","sig":"QZU9rxq3SyVhWEJhhEwZnCfSbc91ynguPLThpnWZobLxaC4S6eT04dSB-dfVPon8jC_ZIZYJtS3_sN6AtpuBAw","text":"hi","to":"11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo","ts":1700000000000}`
	got, err := json.Marshal(alice.message(t, bob.pub, ts, "message", "m1", "hi", alice.pub+"#s1"))
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != wireA {
		t.Errorf("wire form of A:\n%s\nwant\n%s", got, wireA)
	}
	if _, err := origVerify([]byte(wireA)); err != nil {
		t.Errorf("verifying A: %v", err)
	}
	if _, err := origVerify([]byte(strings.Replace(wireA, `"text":"hi"`, `"text":"ho"`, 1))); err == nil {
		t.Errorf("a changed text verifies")
	}
}

// origClient speaks to a bus as the original's client does: unsigned
// JSON bodies, /recv with timeout_ms, /ack echoing the key byte for byte.
type origClient struct {
	tb   testing.TB
	base string
	key  origKey
	rt   string
}

func (c *origClient) do(method, target string, body any) (int, []byte) {
	c.tb.Helper()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			c.tb.Fatal(err)
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, c.base+target, rd)
	if err != nil {
		c.tb.Fatal(err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		c.tb.Fatal(err)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, out
}

// send posts a new message to the route to, addressed to the key toKey.
func (c *origClient) send(to, toKey, msgID, text string) {
	c.tb.Helper()
	m := c.key.message(c.tb, toKey, uint64(time.Now().UnixMilli()), "message", msgID, text, c.rt)
	if code, body := c.do("POST", "/send", map[string]any{"to": to, "payload": m}); code != http.StatusAccepted {
		c.tb.Fatalf("send: %d %s", code, body)
	}
}

// recv long-polls its route once for up to wait and returns the ack key
// and payload, or "" and nil on a timeout.
func (c *origClient) recv(rt string, wait time.Duration) (string, json.RawMessage) {
	c.tb.Helper()
	code, body := c.do("GET", "/recv?me="+url.QueryEscape(rt)+"&timeout_ms="+strconv.FormatInt(wait.Milliseconds(), 10), nil)
	var r struct {
		Status   string `json:"status"`
		Ack      string `json:"ack"`
		Envelope struct {
			Payload json.RawMessage `json:"payload"`
			TS      uint64          `json:"ts"`
		} `json:"envelope"`
	}
	if code != http.StatusOK || json.Unmarshal(body, &r) != nil {
		c.tb.Fatalf("recv %s: %d %s", rt, code, body)
	}
	switch r.Status {
	case "timeout":
		return "", nil
	case "message":
		if !strings.HasPrefix(r.Ack, rt+"\x00") || r.Envelope.TS == 0 {
			c.tb.Fatalf("recv %s: ack %q, envelope ts %d", rt, r.Ack, r.Envelope.TS)
		}
		return r.Ack, r.Envelope.Payload
	}
	c.tb.Fatalf("recv %s: status %q", rt, r.Status)
	return "", nil
}

// next waits for the next message on the client's route, verifies it,
// acknowledges it and returns it.
func (c *origClient) next() map[string]any {
	c.tb.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) {
		ack, payload := c.recv(c.rt, 2*time.Second)
		if payload == nil {
			continue
		}
		m, err := origVerify(payload)
		if err != nil {
			c.tb.Fatalf("the payload does not verify under the original's rules: %v\n%s", err, payload)
		}
		if code, body := c.do("POST", "/ack", map[string]string{"me": c.rt, "ack": ack}); code != http.StatusOK {
			c.tb.Fatalf("ack: %d %s", code, body)
		}
		return m
	}
	c.tb.Fatalf("no message on %s", c.rt)
	return nil
}

// A client of the original's format, written from the wire description
// alone, exchanges messages both ways with this project's agent, on a bus
// with signatures optional (the default) and on one where they are
// declared so, while two signed agents exchange on the same bus: the
// agent sends it the plaintext format, since it announced no sealing,
// and what it receives verifies under the original's rules; each side's
// acknowledgement empties its queue; two such clients also talk through
// the bus to each other.
func TestOriginalClientInteroperatesOnAnOptionalBus(t *testing.T) {
	for _, tt := range []struct {
		name string
		opts *bustest.Options
	}{
		{"default settings", nil},
		{"--auth optional", &bustest.Options{Auth: bus.AuthOptional}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			base := bustest.Start(t, tt.opts)
			orig := &origClient{tb: t, base: base, key: newOrigKey(bytes.Repeat([]byte{0xee}, 32))}
			orig.rt = orig.key.pub + "#o1"

			alice, bob := agenttest.Pair(t)
			agenttest.WriteFile(t, alice.PeersPath, fmt.Sprintf(`{"bob":{"key":%q},"orig":{"key":%q}}`, bob.Key(), orig.key.pub))
			a := agenttest.Start(t, alice, "a1", []string{base}, nil)
			b := agenttest.Start(t, bob, "b1", []string{base}, nil)
			agenttest.OnRoster(t, base, alice.Key(), "a1")
			agenttest.OnRoster(t, base, bob.Key(), "b1")

			// The original's client to the agent.
			orig.send(a.A.Route().String(), alice.Key(), strings.Repeat("0a", 16), "from the original's format")
			a.WaitText("receive_messages", nil, "from the original's format")
			a.WaitDelivered(strings.Repeat("0a", 16))

			// The agent answers to the session the message came from.
			reply := "answer in the original's format"
			id := agenttest.MsgID(t, a.OK("send_message", map[string]any{"to": "orig", "text": reply}))
			m := orig.next()
			if m["text"] != reply || m["msg_id"] != id || m["from"] != alice.Key() || m["to"] != orig.key.pub || m["kind"] != "message" {
				t.Errorf("the original's client received %v", m)
			}
			if extra := plainOnly(m); len(extra) != 0 {
				t.Errorf("a client that announced no sealing received keys outside its format %v: %v", extra, m)
			}
			if ack, _ := orig.recv(orig.rt, 0); ack != "" {
				t.Errorf("the acknowledged message is still queued")
			}
			a.WaitText("message_status", map[string]any{"msg_id": id}, "[bus_accepted]")

			// The signed agents, alongside.
			b.OK("send_message", map[string]any{"to": "alice", "session": "a1", "text": "signed between agents"})
			a.WaitText("receive_messages", nil, "signed between agents")
			a.OK("send_message", map[string]any{"to": "bob", "session": "b1", "text": "signed back"})
			b.WaitText("receive_messages", nil, "signed back")
			// The agents acknowledged everything: their queues are empty to
			// an unsigned peek, which this bus serves.
			for _, rt := range []string{a.A.Route().String(), b.A.Route().String()} {
				agenttest.Eventually(t, rt+" acknowledged", func() bool {
					ack, _ := orig.recv(rt, 0)
					return ack == ""
				})
			}

			// Two clients of the original's format, through this bus.
			other := &origClient{tb: t, base: base, key: newOrigKey(bytes.Repeat([]byte{0xef}, 32))}
			other.rt = other.key.pub + "#o2"
			other.send(orig.rt, orig.key.pub, strings.Repeat("0b", 16), "between two originals")
			if m := orig.next(); m["text"] != "between two originals" || m["from"] != other.key.pub {
				t.Errorf("between two originals: %v", m)
			}
		})
	}
}

// origAnnounceBytes is the announcement encoding under the domain
// "interlink-announce-v1\x00": the raw key, the name and the session's
// id, cwd, git root and summary, each with a u32le length prefix, and
// u64le(ts) last.
func origAnnounceBytes(pub []byte, name, sessionID, cwd, gitRoot, summary string, ts uint64) []byte {
	b := append([]byte("interlink-announce-v1\x00"), pub...)
	for _, s := range []string{name, sessionID, cwd, gitRoot, summary} {
		b = binary.LittleEndian.AppendUint32(b, uint32(len(s)))
		b = append(b, s...)
	}
	return binary.LittleEndian.AppendUint64(b, ts)
}

// announcement returns the original's announcement of one session, as
// it posts it to /announce: no title, no capabilities.
func (k origKey) announcement(name, sessionID, cwd string, ts uint64) map[string]any {
	pub := k.priv.Public().(ed25519.PublicKey)
	sig := ed25519.Sign(k.priv, origAnnounceBytes(pub, name, sessionID, cwd, "", "", ts))
	return map[string]any{"pubkey": k.pub, "name": name, "ts": ts, "sig": b64.EncodeToString(sig),
		"session": map[string]any{"session_id": sessionID, "cwd": cwd, "git_root": "", "summary": ""}}
}

// origAnnouncement is one roster entry as the original's client reads it.
type origAnnouncement struct {
	PubKey  string `json:"pubkey"`
	Name    string `json:"name"`
	TS      uint64 `json:"ts"`
	Sig     string `json:"sig"`
	Session struct {
		SessionID string `json:"session_id"`
		Title     string `json:"title"`
		Cwd       string `json:"cwd"`
		GitRoot   string `json:"git_root"`
		Summary   string `json:"summary"`
	} `json:"session"`
}

// verify checks an entry as the original's client does before 0.10.1:
// the v1 signature under the entry's own key, strictly decoded; title
// and other extensions are ignored.
func (a origAnnouncement) verify() error {
	pub, err1 := b64.Strict().DecodeString(a.PubKey)
	sig, err2 := b64.Strict().DecodeString(a.Sig)
	if err1 != nil || err2 != nil || len(pub) != 32 || len(sig) != 64 {
		return fmt.Errorf("bad key or signature encoding")
	}
	if smallOrder[hex.EncodeToString(pub)] || smallOrder[hex.EncodeToString(sig[:32])] {
		return fmt.Errorf("small-order key or R")
	}
	s := a.Session
	if !ed25519.Verify(pub, origAnnounceBytes(pub, a.Name, s.SessionID, s.Cwd, s.GitRoot, s.Summary, a.TS), sig) {
		return fmt.Errorf("signature does not verify")
	}
	return nil
}

// announce posts the client's announcement of its session, unsigned.
func (c *origClient) announce(name string) {
	c.tb.Helper()
	_, session, _ := strings.Cut(c.rt, "#")
	a := c.key.announcement(name, session, "/work/original", uint64(time.Now().UnixMilli()))
	if code, body := c.do("POST", "/announce", a); code != http.StatusAccepted {
		c.tb.Fatalf("announce: %d %s", code, body)
	}
}

// roster fetches /roster and returns the entries that parse and verify,
// skipping the others, as the original's client does.
func (c *origClient) roster() []origAnnouncement {
	c.tb.Helper()
	code, body := c.do("GET", "/roster", nil)
	var doc struct {
		Roster []json.RawMessage `json:"roster"`
	}
	if code != http.StatusOK || json.Unmarshal(body, &doc) != nil {
		c.tb.Fatalf("roster: %d %s", code, body)
	}
	var out []origAnnouncement
	for _, raw := range doc.Roster {
		var a origAnnouncement
		if json.Unmarshal(raw, &a) != nil || a.verify() != nil {
			continue
		}
		out = append(out, a)
	}
	return out
}

// post sends a signed message of any kind from the client's session to
// the route to, addressed to toKey.
func (c *origClient) post(to, toKey string, ts uint64, kind, msgID, text, inReplyTo string) {
	c.tb.Helper()
	toRaw, err := b64.DecodeString(toKey)
	if err != nil {
		c.tb.Fatal(err)
	}
	from := c.key.priv.Public().(ed25519.PublicKey)
	sig := ed25519.Sign(c.key.priv, origSigningBytes(from, toRaw, ts, kind, msgID, text, "", "", inReplyTo))
	m := map[string]any{"from": c.key.pub, "to": toKey, "ts": ts, "kind": kind, "msg_id": msgID, "text": text,
		"reply_to": c.rt, "sig": b64.EncodeToString(sig)}
	if inReplyTo != "" {
		m["in_reply_to"] = inReplyTo
	}
	if code, body := c.do("POST", "/send", map[string]any{"to": to, "payload": m}); code != http.StatusAccepted {
		c.tb.Fatalf("send %s: %d %s", kind, code, body)
	}
}

// origFields are the keys of the original's message format.
var origFields = map[string]bool{"from": true, "to": true, "text": true, "ts": true, "msg_id": true, "kind": true,
	"task_id": true, "status": true, "in_reply_to": true, "reply_to": true, "sig": true}

// plainOnly reports the keys of m outside the original's format.
func plainOnly(m map[string]any) []string {
	var extra []string
	for k := range m {
		if !origFields[k] {
			extra = append(extra, k)
		}
	}
	return extra
}

// The announcement encoder reproduces the published example.
func TestOriginalClientAnnouncementMatchesTheVector(t *testing.T) {
	alice := newOrigKey(make([]byte, 32))
	pub := []byte(alice.priv.Public().(ed25519.PublicKey))
	b := origAnnounceBytes(pub, "alice", "s1", "/w", "w", "", 1700000000000)
	const wantHex = "696e7465726c696e6b2d616e6e6f756e63652d7631003b6a27bcceb6a42d62a3a8d02a6f0d73653215771de243a63ac0" +
		"48a18b59da2905000000616c696365020000007331020000002f770100000077000000000068e5cf8b010000"
	if got := hex.EncodeToString(b); got != wantHex {
		t.Errorf("bytes\n%s\nwant\n%s", got, wantHex)
	}
	const wantSig = "XRKjQDACLFESrMrCz77NBJ-wZo3F4wuJ4FSuAdEFzRkmDBPqHb12HPfXdkTx8gSEWzNrLKMAIp_o1tu7nRzxDA"
	if got := b64.EncodeToString(ed25519.Sign(alice.priv, b)); got != wantSig {
		t.Errorf("signature %s, want %s", got, wantSig)
	}
	a := origAnnouncement{PubKey: alice.pub, Name: "alice", TS: 1700000000000, Sig: wantSig}
	a.Session.SessionID, a.Session.Cwd, a.Session.GitRoot = "s1", "/w", "w"
	if err := a.verify(); err != nil {
		t.Errorf("verifying the example: %v", err)
	}
	a.Session.Cwd = "/x"
	if a.verify() == nil {
		t.Errorf("a changed cwd verifies")
	}
}

// A client of the original's format and this project's agents find each
// other on the roster and pair in both directions on a bus where
// signatures are optional: the agent's announcement verifies under the
// original's rules and the original's shows in discover; the original
// knocks and the agent's operator accepts, the agent knocks and the
// original accepts; after each, messages flow; the original leaves with
// its unsigned unregister. Everything the original receives is the
// plaintext format, with no key it does not know.
func TestOriginalClientDiscoversAndPairsWithAnAgentBothWays(t *testing.T) {
	base := bustest.Start(t, &bustest.Options{Auth: bus.AuthOptional})
	orig := &origClient{tb: t, base: base, key: newOrigKey(bytes.Repeat([]byte{0xe1}, 32))}
	orig.rt = orig.key.pub + "#o1"
	orig.announce("original-client")
	named := func(name string) *agenttest.Options {
		return &agenttest.Options{Edit: func(c *agent.Config) { c.Name = name }}
	}
	alice, bob := agenttest.NewIdent(t), agenttest.NewIdent(t)
	a := agenttest.Start(t, alice, "a1", []string{base}, named("alice"))
	b := agenttest.Start(t, bob, "b1", []string{base}, named("bob"))
	agenttest.OnRoster(t, base, alice.Key(), "a1")
	agenttest.OnRoster(t, base, bob.Key(), "b1")

	// Roster, both ways.
	seen := map[string]string{}
	for _, e := range orig.roster() {
		seen[e.PubKey+"#"+e.Session.SessionID] = e.Name
	}
	if seen[alice.Key()+"#a1"] != "alice" || seen[bob.Key()+"#b1"] != "bob" || seen[orig.rt] != "original-client" {
		t.Errorf("the original's client verified these roster entries: %v", seen)
	}
	if got := a.OK("discover", map[string]any{"peer": "original-client"}); !strings.Contains(got, orig.key.pub) ||
		!strings.Contains(got, "o1") || !strings.Contains(got, "/work/original") {
		t.Errorf("discover original-client = %q", got)
	}

	// next, with the payload checked to be the plaintext format alone.
	next := func() map[string]any {
		t.Helper()
		m := orig.next()
		if extra := plainOnly(m); len(extra) != 0 {
			t.Errorf("the original's client received keys outside its format %v: %v", extra, m)
		}
		return m
	}

	// The original knocks on alice; her operator accepts.
	reqID := strings.Repeat("1a", 16)
	orig.post(a.A.Route().String(), alice.Key(), uint64(time.Now().UnixMilli()), "pair_request", reqID, "original-client", "")
	a.WaitNotice("Pairing request")
	if got := a.OK("list_pair_requests", nil); !strings.Contains(got, orig.key.pub) {
		t.Fatalf("alice's pending requests = %q", got)
	}
	a.OK("accept_pair", map[string]any{"fingerprint": orig.key.pub})
	m := next()
	if m["kind"] != "pair_accept" || m["in_reply_to"] != reqID || m["from"] != alice.Key() || m["text"] != "alice" {
		t.Fatalf("the original's client received %v, want alice's pair_accept of %s", m, reqID)
	}
	if got := a.OK("list_peers", nil); !strings.Contains(got, orig.key.pub) {
		t.Errorf("alice's peers after accepting = %q", got)
	}
	orig.send(a.A.Route().String(), alice.Key(), strings.Repeat("2a", 16), "paired, from the original")
	a.WaitText("receive_messages", nil, "paired, from the original")
	a.OK("send_message", map[string]any{"to": "original-client", "text": "paired, from alice"})
	if m := next(); m["text"] != "paired, from alice" || m["from"] != alice.Key() {
		t.Errorf("the original's client received %v", m)
	}

	// Bob knocks on the original; the original accepts.
	if got := b.OK("request_pair", map[string]any{"target": "original-client"}); requestID(got) == "" {
		t.Fatalf("request_pair = %q", got)
	}
	m = next()
	if m["kind"] != "pair_request" || m["from"] != bob.Key() || m["text"] != "bob" || m["reply_to"] != bob.Key()+"#b1" {
		t.Fatalf("the original's client received %v, want bob's knock", m)
	}
	orig.post(bob.Key()+"#b1", bob.Key(), uint64(time.Now().UnixMilli()), "pair_accept", strings.Repeat("3a", 16),
		"original-client", m["msg_id"].(string))
	b.WaitNotice("Paired with 'original-client'")
	b.OK("send_message", map[string]any{"to": "original-client", "text": "paired, from bob"})
	if m := next(); m["text"] != "paired, from bob" || m["from"] != bob.Key() {
		t.Errorf("the original's client received %v", m)
	}
	orig.send(bob.Key()+"#b1", bob.Key(), strings.Repeat("4a", 16), "paired, to bob")
	b.WaitText("receive_messages", nil, "paired, to bob")

	// The original leaves as it does, with an unsigned unregister.
	body := map[string]any{"pubkey": orig.key.pub, "session": map[string]any{"session_id": "o1", "cwd": "/work/original",
		"git_root": "", "summary": ""}}
	if code, out := orig.do("POST", "/unregister", body); code != http.StatusAccepted {
		t.Fatalf("unregister: %d %s", code, out)
	}
	for _, e := range orig.roster() {
		if e.PubKey == orig.key.pub {
			t.Errorf("the original's session is still listed: %+v", e)
		}
	}
}
