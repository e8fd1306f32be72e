package wire

import (
	"bytes"
	"encoding/json"
	"errors"
	"slices"
	"testing"

	"github.com/interlink-go/interlink/internal/identity"
)

// FuzzRosterElements: splitting a roster reply never panics, and for any
// reply encoding/json can decode, the elements are exactly those it finds
// under "roster" (the last such member, matched exactly).
func FuzzRosterElements(f *testing.F) {
	for _, s := range []string{
		`{"roster":[]}`, `{"roster":[1,"a",{"b":[]},null]}`, `{"roster":[],"roster":[{}]}`, `{"ROSTER":[]}`,
		`{"roster":5}`, `[]`, `{"roster":[`, `{"a":"]","roster":[" ]\" "]}`, `{"roster":[1 2]}`, ` {"roster" : [ 1 , 2 ] } `,
		`{"roster":[1e400,-0.5,true,false]}`, "{\"roster\":[\"\xff\"]}", `{"roster":[[[]]]}x`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		elems, err := RosterElements(body)
		var top map[string]json.RawMessage
		if json.Unmarshal(body, &top) != nil {
			return
		}
		var want []json.RawMessage
		raw, ok := top["roster"]
		if !ok || json.Unmarshal(raw, &want) != nil || want == nil {
			if err == nil {
				t.Fatalf("accepted %q, which has no roster array", body)
			}
			return
		}
		if err != nil {
			t.Fatalf("refused %q: %v", body, err)
		}
		if len(elems) != len(want) {
			t.Fatalf("%d elements, want %d, in %q", len(elems), len(want), body)
		}
		for i := range want {
			if !bytes.Equal(bytes.TrimSpace(elems[i]), bytes.TrimSpace(want[i])) {
				t.Fatalf("element %d = %q, want %q", i, elems[i], want[i])
			}
		}
	})
}

// An announcement the bus stored comes out of a /roster answer as it was
// announced, with its age and without the age the sender claimed, and the
// answer's length is what RosterEntryLen and RosterEntryOverhead say.
func FuzzAnnounceListsBack(f *testing.F) {
	f.Add([]byte(`{"pubkey":"K","name":"a <b>","session":{"session_id":"s1","summary":"x"},"ts":1,"sig":"S"}`), int64(5))
	f.Add([]byte(`{"pubkey":"K","age_ms":99}`), int64(0))
	f.Add([]byte(`{"pubkey":"K","session":{"session_id":7}}`), int64(9223372036854775807))
	f.Fuzz(func(t *testing.T, body []byte, age int64) {
		a, err := DecodeAnnounce(body)
		if err != nil || age < 0 {
			return
		}
		answer := []byte(RosterOpen)
		for i := range 2 {
			answer = AppendRosterEntryHead(answer, i == 0, age, len(a.Fields) > 0)
			answer = append(answer, a.Fields...)
			answer = append(answer, RosterEntryClose...)
		}
		answer = append(answer, RosterClose...)
		if n := len(RosterOpen) + RosterEntryLen(true, age, len(a.Fields)) + RosterEntryLen(false, age, len(a.Fields)) + len(RosterClose); n != len(answer) {
			t.Fatalf("RosterEntryLen counts %d bytes, the answer has %d", n, len(answer))
		}
		if len(answer)-len(RosterOpen)-len(RosterClose) > 2*(len(a.Fields)+RosterEntryOverhead) {
			t.Fatalf("an entry costs more than RosterEntryOverhead beside its fields: %q", answer)
		}
		elems, err := RosterElements(answer)
		if err != nil || len(elems) != 2 {
			t.Fatalf("answer %q: %d elements, %v", answer, len(elems), err)
		}
		var sent, listed map[string]any
		if err := json.Unmarshal(body, &sent); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(elems[0], &listed); err != nil {
			t.Fatalf("element %q: %v", elems[0], err)
		}
		delete(sent, "age_ms")
		if got, ok := listed["age_ms"].(float64); !ok || got != float64(age) {
			t.Fatalf("age %v, want %d", listed["age_ms"], age)
		}
		delete(listed, "age_ms")
		want, _ := json.Marshal(sent)
		got, _ := json.Marshal(listed)
		if !bytes.Equal(want, got) {
			t.Fatalf("listed %s, announced %s", got, want)
		}
	})
}

// A /roster query either fails with ErrQuery or yields 1 to MaxRosterKeys
// canonical keys, sorted and distinct, each of which parses back to
// itself; no query is a lookup of nothing.
func FuzzDecodeRosterQuery(f *testing.F) {
	k := "11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo"
	for _, s := range []string{"", "keys=" + k, "keys=" + k + "," + k, "keys=", "keys=a&keys=b", "x=1", "keys=%zz", "keys=" + k + "%2C" + k} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		q, err := DecodeRosterQuery(raw)
		if err != nil {
			if !errors.Is(err, ErrQuery) {
				t.Fatalf("%q: error %v does not wrap ErrQuery", raw, err)
			}
			return
		}
		if q.Keys == nil {
			return
		}
		if len(q.Keys) == 0 || len(q.Keys) > MaxRosterKeys || !slices.IsSorted(q.Keys) || len(slices.Compact(slices.Clone(q.Keys))) != len(q.Keys) {
			t.Fatalf("%q: keys %q", raw, q.Keys)
		}
		for _, key := range q.Keys {
			p, err := identity.ParsePublicKey(key)
			if err != nil || p.String() != key {
				t.Fatalf("%q: key %q is not canonical: %v", raw, key, err)
			}
		}
	})
}
