package identity

import (
	"bytes"
	"crypto/ed25519"
	"crypto/sha512"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"filippo.io/edwards25519"
	"github.com/google/go-cmp/cmp"
)

func TestSignVerifyRoundTrip(t *testing.T) {
	alice := mustSigner(t, aliceKeyFile)
	m := signed(t, alice, bobPub, func(m *Message) {
		m.TaskID, m.Status, m.InReplyTo = "t1", StatusNeedsInput, "q1"
	})
	data, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	back, err := DecodeMessage(data)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(m, back); diff != "" {
		t.Errorf("JSON round trip (-sent +received):\n%s", diff)
	}
	k, err := back.Verify()
	if err != nil || k != alice.Public() {
		t.Fatalf("Verify = %s, %v", k, err)
	}
}

func TestLengthPrefixes(t *testing.T) {
	a := Canonical{Kind: "message", MsgID: "ab", Text: "c"}
	b := Canonical{Kind: "message", MsgID: "a", Text: "bc"}
	if bytes.Equal(a.Bytes(), b.Bytes()) {
		t.Fatal(`("ab","c") and ("a","bc") encode identically`)
	}
	alice := mustSigner(t, aliceKeyFile)
	m := signed(t, alice, bobPub, func(m *Message) { m.MsgID, m.Text = "ab", "c" })
	m.MsgID, m.Text = "a", "bc"
	if _, err := m.Verify(); !errors.Is(err, ErrSignature) {
		t.Errorf("moving a byte between msg_id and text kept the signature valid: %v", err)
	}
}

// TestDomainSeparation shows that a signature made over other bytes by the
// same key, with an older domain or as an announcement, never verifies as a
// message.
func TestDomainSeparation(t *testing.T) {
	alice := mustSigner(t, aliceKeyFile)
	m := signed(t, alice, bobPub, nil)
	c, _ := m.Canonical()

	v1 := append([]byte("interlink-v1\x00"), c.Bytes()[len(Domain):]...)
	m1 := m
	m1.Sig = EncodeBase64(alice.Sign(v1))
	if _, err := m1.Verify(); !errors.Is(err, ErrSignature) {
		t.Errorf("v1-domain signature verified: %v", err)
	}

	a := alice.Announce("alice", SessionInfo{SessionID: "s1"}, testTS)
	m2 := m
	m2.Sig = a.Sig
	if _, err := m2.Verify(); !errors.Is(err, ErrSignature) {
		t.Errorf("announcement signature verified as a message: %v", err)
	}
	// And the other way round.
	a.Sig = m.Sig
	if _, err := a.Verify(); !errors.Is(err, ErrSignature) {
		t.Errorf("message signature verified as an announcement: %v", err)
	}
}

func TestTamper(t *testing.T) {
	alice := mustSigner(t, aliceKeyFile)
	carol := seededSigner(t, 7)
	orig := signed(t, alice, bobPub, func(m *Message) {
		m.TaskID, m.Status, m.InReplyTo = "t1", StatusUpdate, "q1"
	})
	for name, edit := range map[string]func(*Message){
		"text":        func(m *Message) { m.Text = "hI" },
		"ts":          func(m *Message) { m.TS++ },
		"msg_id":      func(m *Message) { m.MsgID = "m2" },
		"kind":        func(m *Message) { m.Kind = KindPairRequest },
		"status":      func(m *Message) { m.Status = StatusCanceled },
		"status gone": func(m *Message) { m.Status = "" },
		"task_id":     func(m *Message) { m.TaskID = "t2" },
		"in_reply_to": func(m *Message) { m.InReplyTo = "q2" },
		"to":          func(m *Message) { m.To = carol.Public().String() },
		"sig bit":     func(m *Message) { m.Sig = flipSigBit(t, m.Sig, 100) },
	} {
		t.Run(name, func(t *testing.T) {
			m := orig
			edit(&m)
			if _, err := m.Verify(); !errors.Is(err, ErrSignature) {
				t.Errorf("tampered %s still verifies (err %v)", name, err)
			}
		})
	}
	if _, err := orig.Verify(); err != nil {
		t.Fatalf("untampered message: %v", err)
	}
}

func flipSigBit(tb testing.TB, sig string, bit int) string {
	tb.Helper()
	b, err := DecodeBase64(sig)
	if err != nil {
		tb.Fatal(err)
	}
	b[bit/8] ^= 1 << (bit % 8)
	return EncodeBase64(b)
}

func TestForgedSender(t *testing.T) {
	eve := seededSigner(t, 9)
	m := signed(t, eve, bobPub, nil)
	m.From = alicePub // Eve's signature, Alice's name on it
	if _, err := m.Verify(); !errors.Is(err, ErrSignature) {
		t.Errorf("forged sender verified: %v", err)
	}
}

// invalidPoint returns 32 bytes that do not decode to a curve point.
func invalidPoint(tb testing.TB) []byte {
	tb.Helper()
	for i := range 256 {
		b := make([]byte, 32)
		b[0] = byte(i)
		b[1] = 0x55
		if _, err := new(edwards25519.Point).SetBytes(b); err != nil {
			return b
		}
	}
	tb.Fatal("no invalid encoding found")
	return nil
}

func TestInvalidPointKeys(t *testing.T) {
	bad := EncodeBase64(invalidPoint(t))
	if _, err := ParsePublicKey(bad); !errors.Is(err, ErrKeyPoint) {
		t.Fatalf("ParsePublicKey(invalid point) = %v, want ErrKeyPoint", err)
	}
	alice := mustSigner(t, aliceKeyFile)
	for name, edit := range map[string]func(*Message){
		"to":   func(m *Message) { m.To = bad },
		"from": func(m *Message) { m.From = bad },
	} {
		m := signed(t, alice, bobPub, nil)
		edit(&m)
		if _, err := m.Verify(); !errors.Is(err, ErrSignature) {
			t.Errorf("%s not a point: %v, want ErrSignature", name, err)
		}
	}
	// Signing for a recipient that is not a key fails up front.
	m := Message{To: bad, MsgID: "x"}
	if err := alice.SignMessage(&m); err == nil {
		t.Error("SignMessage accepted an invalid recipient")
	}
}

func TestSignatureLength(t *testing.T) {
	alice := mustSigner(t, aliceKeyFile)
	m := signed(t, alice, bobPub, nil)
	sig, _ := DecodeBase64(m.Sig)
	for _, n := range []int{0, 63, 65, 128} {
		b := make([]byte, n)
		copy(b, sig)
		mm := m
		mm.Sig = EncodeBase64(b)
		if _, err := mm.Verify(); !errors.Is(err, ErrSignature) {
			t.Errorf("%d-byte sig: %v, want ErrSignature", n, err)
		}
		if VerifyStrict(alice.pub[:], []byte("x"), b) {
			t.Errorf("VerifyStrict accepted a %d-byte sig", n)
		}
	}
	if VerifyStrict(alice.pub[:31], []byte("x"), sig) {
		t.Error("VerifyStrict accepted a 31-byte key")
	}
}

// groupOrder is ℓ in little-endian bytes.
var groupOrder = [32]byte{
	0xed, 0xd3, 0xf5, 0x5c, 0x1a, 0x63, 0x12, 0x58, 0xd6, 0x9c, 0xf7, 0xa2, 0xde, 0xf9, 0xde, 0x14,
	0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x10,
}

func TestNonCanonicalS(t *testing.T) {
	alice := mustSigner(t, aliceKeyFile)
	m := signed(t, alice, bobPub, nil)
	sig, _ := DecodeBase64(m.Sig)
	// S + ℓ is the same scalar, written non-canonically.
	var carry uint16
	for i := range 32 {
		v := uint16(sig[32+i]) + uint16(groupOrder[i]) + carry
		sig[32+i] = byte(v)
		carry = v >> 8
	}
	if carry != 0 {
		t.Fatal("S + ℓ overflowed 256 bits")
	}
	m.Sig = EncodeBase64(sig)
	if _, err := m.Verify(); !errors.Is(err, ErrSignature) {
		t.Errorf("non-canonical S accepted: %v", err)
	}
}

// smallOrderEncodings are the 14 byte strings that decode to points of
// order dividing 8: eight canonical encodings and six non-canonical ones.
var smallOrderEncodings = []string{
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
}

// TestSmallOrderKeys signs with an identity R and a zero S, the forgery that
// works against plain crypto/ed25519 for the identity key, and checks that
// every small-order key is refused for every message.
func TestSmallOrderKeys(t *testing.T) {
	trivial := make([]byte, 64)
	trivial[0] = 1 // R = identity, S = 0
	msgs := [][]byte{nil, []byte("a"), []byte("pay bob"), bytes.Repeat([]byte{7}, 200)}
	for i := range 40 {
		msgs = append(msgs, []byte(strings.Repeat("x", i)))
	}
	identity := mustHex(t, smallOrderEncodings[0])
	for _, msg := range msgs {
		if !ed25519.Verify(ed25519.PublicKey(identity), msg, trivial) {
			t.Fatalf("premise: crypto/ed25519.Verify refuses the identity-key forgery for %q", msg)
		}
	}
	for _, hx := range smallOrderEncodings {
		pub := mustHex(t, hx)
		k, err := ParsePublicKey(EncodeBase64(pub))
		if err != nil {
			t.Errorf("%s: small-order key does not parse (it must, and fail later): %v", hx, err)
			continue
		}
		if !k.SmallOrder() {
			t.Errorf("%s: SmallOrder() = false", hx)
		}
		for _, msg := range msgs {
			if VerifyStrict(pub, msg, trivial) {
				t.Errorf("%s: forgery accepted for %q", hx, msg)
			}
		}
		// Through a full message, too.
		m := Message{From: EncodeBase64(pub), To: bobPub, Text: "hi", TS: testTS, MsgID: "m", Kind: KindMessage, Sig: EncodeBase64(trivial)}
		if _, err := m.Verify(); !errors.Is(err, ErrSignature) {
			t.Errorf("%s: message verified: %v", hx, err)
		}
	}
	if mustSigner(t, aliceKeyFile).Public().SmallOrder() {
		t.Error("a real key reported as small order")
	}
}

// TestSmallOrderR builds a signature whose R is the identity point by
// knowing the secret scalar: crypto/ed25519 accepts it, VerifyStrict must not.
func TestSmallOrderR(t *testing.T) {
	alice := mustSigner(t, aliceKeyFile)
	h := sha512.Sum512(alice.Seed())
	a, err := edwards25519.NewScalar().SetBytesWithClamping(h[:32])
	if err != nil {
		t.Fatal(err)
	}
	pub := alice.Public()
	for _, rHex := range smallOrderEncodings[:8] {
		R := mustHex(t, rHex)
		msg := []byte("small order R")
		kh := sha512.New()
		kh.Write(R)
		kh.Write(pub[:])
		kh.Write(msg)
		k, _ := edwards25519.NewScalar().SetUniformBytes(kh.Sum(nil))
		S := edwards25519.NewScalar().Multiply(k, a)
		sig := append(append([]byte{}, R...), S.Bytes()...)
		if VerifyStrict(pub[:], msg, sig) {
			t.Errorf("R=%s: small-order R accepted", rHex)
		}
		if rHex == smallOrderEncodings[0] && !ed25519.Verify(ed25519.PublicKey(pub[:]), msg, sig) {
			t.Error("premise: crypto/ed25519.Verify refuses the identity-R signature")
		}
	}
}

// TestUnsignedAndEmptyFields covers what the signature deliberately does not
// pin down: the reply_to hint, empty versus absent optional fields, and an
// absent kind.
func TestUnsignedAndEmptyFields(t *testing.T) {
	alice := mustSigner(t, aliceKeyFile)
	m := signed(t, alice, bobPub, nil)
	for name, replyTo := range map[string]string{
		"changed": bobPub + "#s9", "removed": "", "other session": alicePub + "#s2",
	} {
		mm := m
		mm.ReplyTo = replyTo
		if _, err := mm.Verify(); err != nil {
			t.Errorf("reply_to %s: %v", name, err)
		}
	}
	var raw map[string]any
	data, _ := json.Marshal(m)
	if err := json.Unmarshal(data, &raw); err != nil {
		t.Fatal(err)
	}
	for name, edit := range map[string]func(map[string]any){
		"task_id empty":     func(r map[string]any) { r["task_id"] = "" },
		"in_reply_to empty": func(r map[string]any) { r["in_reply_to"] = "" },
		"status empty":      func(r map[string]any) { r["status"] = "" },
		"status null":       func(r map[string]any) { r["status"] = nil },
		"kind absent":       func(r map[string]any) { delete(r, "kind") },
		"reply_to absent":   func(r map[string]any) { delete(r, "reply_to") },
		"unknown field":     func(r map[string]any) { r["future"] = map[string]any{"x": 1} },
	} {
		t.Run(name, func(t *testing.T) {
			r := map[string]any{}
			for k, v := range raw {
				r[k] = v
			}
			edit(r)
			data, _ := json.Marshal(r)
			got, err := DecodeMessage(data)
			if err != nil {
				t.Fatal(err)
			}
			if got.Kind != KindMessage || got.TaskID != "" || got.Status != "" || got.InReplyTo != "" {
				t.Errorf("decoded %+v", got)
			}
			if _, err := got.Verify(); err != nil {
				t.Errorf("verify: %v", err)
			}
		})
	}
}

func TestDecodeRejects(t *testing.T) {
	alice := mustSigner(t, aliceKeyFile)
	good, _ := json.Marshal(signed(t, alice, bobPub, nil))
	replace := func(old, new string) string {
		s := strings.Replace(string(good), old, new, 1)
		if s == string(good) {
			t.Fatalf("%q not in %s", old, good)
		}
		return s
	}
	for name, payload := range map[string]string{
		"unknown kind":       replace(`"kind":"message"`, `"kind":"chat"`),
		"null kind":          replace(`"kind":"message"`, `"kind":null`),
		"kind not a string":  replace(`"kind":"message"`, `"kind":1`),
		"unknown status":     replace(`"kind":"message"`, `"kind":"message","status":"done"`),
		"status wrong case":  replace(`"kind":"message"`, `"kind":"message","status":"Update"`),
		"status cancelled":   replace(`"kind":"message"`, `"kind":"message","status":"cancelled"`),
		"float ts":           replace(`"ts":1700000000000`, `"ts":1700000000000.0`),
		"exponent ts":        replace(`"ts":1700000000000`, `"ts":1.7e12`),
		"negative ts":        replace(`"ts":1700000000000`, `"ts":-1`),
		"string ts":          replace(`"ts":1700000000000`, `"ts":"1700000000000"`),
		"ts past 2^64":       replace(`"ts":1700000000000`, `"ts":18446744073709551616`),
		"missing text":       replace(`"text":"hi",`, ``),
		"null text":          replace(`"text":"hi"`, `"text":null`),
		"text not a string":  replace(`"text":"hi"`, `"text":["hi"]`),
		"missing sig":        replace(`,"sig"`, `,"gis"`),
		"task_id not string": replace(`"kind":"message"`, `"kind":"message","task_id":5`),
		"reply_to object":    replace(`"reply_to":"`, `"reply_to":{},"x":"`),
		"array":              "[" + string(good) + "]",
		"null":               "null",
		"trailing garbage":   string(good) + "x",
		"empty":              "",
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := DecodeMessage([]byte(payload)); !errors.Is(err, ErrDecode) {
				t.Errorf("DecodeMessage(%s) = %v, want ErrDecode", payload, err)
			}
		})
	}
}

func TestMarshalOmitsEmpty(t *testing.T) {
	m := Message{From: "f", To: "t", Text: "<b>&", MsgID: "i", Sig: "s"}
	// MarshalJSON itself leaves <, > and & alone; json.Marshal escapes
	// them again, which decodes to the same text.
	got, err := m.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	want := `{"from":"f","to":"t","text":"<b>&","ts":0,"msg_id":"i","kind":"message","sig":"s"}`
	if string(got) != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}

func TestCanonicalRoundTrip(t *testing.T) {
	alice := mustSigner(t, aliceKeyFile)
	m := signed(t, alice, bobPub, func(m *Message) { m.Status, m.TaskID, m.InReplyTo = StatusResult, "t", "r" })
	c, _ := m.Canonical()
	back, err := ParseCanonical(c.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(c, back); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	b := c.Bytes()
	for name, in := range map[string][]byte{
		"truncated": b[:len(b)-1],
		"trailing":  append(append([]byte{}, b...), 0),
		"v1 domain": append([]byte("interlink-v1\x00"), b[len(Domain):]...),
		"short":     b[:20],
	} {
		if _, err := ParseCanonical(in); !errors.Is(err, ErrCanonical) {
			t.Errorf("%s: %v, want ErrCanonical", name, err)
		}
	}
}

func TestStatusTerminal(t *testing.T) {
	for s, want := range map[Status]bool{
		StatusResult: true, StatusFailed: true, StatusCanceled: true,
		StatusUpdate: false, StatusNeedsInput: false, "": false,
	} {
		if s.Terminal() != want {
			t.Errorf("%q.Terminal() = %v", s, !want)
		}
	}
}

// AppendString writes what Marshal writes for a string, for every kind of
// character that needs escaping.
func TestAppendStringMatchesMarshal(t *testing.T) {
	for _, s := range []string{
		"", "plain", `quote " and backslash \`, "tab\tnew\nline\rcr", "\x00\x01\x1f\x7f",
		"<html> & 'apostrophe'", "é ü 日本", "line\u2028para\u2029", "bad \xff byte", "\xed\xa0\x80 surrogate",
	} {
		want, err := Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		if got := AppendString([]byte("x"), s); string(got) != "x"+string(want) {
			t.Errorf("AppendString(%q) = %s, want %s", s, got[1:], want)
		}
	}
}

func FuzzAppendString(f *testing.F) {
	f.Add("plain \" \\ \n \u2028 \xff")
	f.Fuzz(func(t *testing.T, s string) {
		want, err := Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		if got := AppendString(nil, s); string(got) != string(want) {
			t.Fatalf("AppendString(%q) = %s, want %s", s, got, want)
		}
	})
}
