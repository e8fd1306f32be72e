package policy

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/interlink-go/interlink/internal/identity"
)

// Policy is one snapshot of peers.json. It is never changed once built, so
// it may be shared between goroutines; a Store produces a new one for every
// read. The zero Policy is empty.
type Policy struct {
	byName map[string]identity.PublicKey
	byKey  map[identity.PublicKey]string
}

// Entry is one peer: its petname and its key.
type Entry struct {
	Name string
	Key  identity.PublicKey
}

// Petname returns the petname of k, if k is listed. It is the lookup the
// trust gate does with an authenticated key.
func (p *Policy) Petname(k identity.PublicKey) (string, bool) {
	name, ok := p.byKey[k]
	return name, ok
}

// Key returns the key the petname name stands for. The match is exact:
// case-sensitive and untrimmed.
func (p *Policy) Key(name string) (identity.PublicKey, bool) {
	k, ok := p.byName[name]
	return k, ok
}

// Len returns the number of peers.
func (p *Policy) Len() int { return len(p.byName) }

// Entries returns all peers sorted by petname, byte-wise.
func (p *Policy) Entries() []Entry {
	es := make([]Entry, 0, len(p.byName))
	for name, k := range p.byName {
		es = append(es, Entry{Name: name, Key: k})
	}
	slices.SortFunc(es, func(a, b Entry) int { return strings.Compare(a.Name, b.Name) })
	return es
}

// fileEntry is the written form of one entry.
type fileEntry struct {
	Key identity.PublicKey `json:"key"`
}

// Marshal returns the file form of p: a JSON object indented by two spaces,
// petnames sorted byte-wise, each entry holding only its key, HTML
// characters left unescaped, and a final newline. An empty policy is "{}\n".
// Parse(p.Marshal()) always equals p.
func (p *Policy) Marshal() []byte {
	m := make(map[string]fileEntry, len(p.byName))
	for name, k := range p.byName {
		m[name] = fileEntry{Key: k}
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	// encoding/json sorts map keys byte-wise; the Encoder adds the newline.
	if err := enc.Encode(m); err != nil {
		panic("policy: encoding a policy cannot fail: " + err.Error())
	}
	return buf.Bytes()
}

// clone returns a copy of p that may be changed.
func (p *Policy) clone() *Policy {
	c := &Policy{
		byName: make(map[string]identity.PublicKey, len(p.byName)+1),
		byKey:  make(map[identity.PublicKey]string, len(p.byKey)+1),
	}
	for name, k := range p.byName {
		c.put(name, k)
	}
	return c
}

// put lists k under name. The caller makes sure neither is listed yet.
func (p *Policy) put(name string, k identity.PublicKey) {
	if p.byName == nil {
		p.byName = make(map[string]identity.PublicKey)
		p.byKey = make(map[identity.PublicKey]string)
	}
	p.byName[name] = k
	p.byKey[k] = name
}

// remove deletes the entry for name and reports whether there was one.
func (p *Policy) remove(name string) bool {
	k, ok := p.byName[name]
	if ok {
		delete(p.byName, name)
		delete(p.byKey, k)
	}
	return ok
}

// Parse reads the file form of a policy. Any problem rejects the whole file
// with an error wrapping [ErrInvalid] that says what is wrong: not UTF-8, not
// a JSON object, a petname that [CheckPetname] refuses (also
// [ErrInvalidName] or [ErrReservedName]), an entry that is not an object or
// has no string "key", a key that does not parse, the same key under two petnames (also
// [ErrDuplicateKey]), a petname that appears twice (also [ErrDuplicateName];
// encoding/json alone would silently keep the last one), or data after the
// object. Fields of an entry other than "key" are ignored.
//
// Keys of small order load, for compatibility with files written elsewhere;
// they can never sign a message that verifies, so they admit nothing.
func Parse(data []byte) (*Policy, error) {
	// The decoder would silently replace invalid bytes in strings.
	if !utf8.Valid(data) {
		return nil, fmt.Errorf("%w: not valid UTF-8", ErrInvalid)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	tok, err := dec.Token()
	if err != nil {
		return nil, syntaxError(err)
	}
	if tok != json.Delim('{') {
		return nil, fmt.Errorf("%w: top level is %s, want a JSON object", ErrInvalid, describe(tok))
	}
	p := &Policy{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, syntaxError(err)
		}
		name, ok := tok.(string)
		if !ok { // the decoder only returns strings in key position
			return nil, fmt.Errorf("%w: object key is %s", ErrInvalid, describe(tok))
		}
		if _, dup := p.byName[name]; dup {
			return nil, fmt.Errorf("%w: %q", ErrDuplicateName, name)
		}
		// A petname is shown as the sender of its peer's messages, so a
		// hand-edited file must not be able to name a peer "self" or
		// "Interlink", or give it a name rendering would alter.
		if pe := checkPetname(name); pe != nil {
			return nil, fmt.Errorf("%w: %w", ErrInvalid, pe)
		}
		k, err := parseEntry(dec, name)
		if err != nil {
			return nil, err
		}
		if other, dup := p.byKey[k]; dup {
			return nil, fmt.Errorf("%w: %q and %q both have key %s", ErrDuplicateKey, other, name, k)
		}
		p.put(name, k)
	}
	if _, err := dec.Token(); err != nil { // the closing brace
		return nil, syntaxError(err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("%w: data after the top-level object", ErrInvalid)
	}
	return p, nil
}

// parseEntry reads the value of petname name from dec and returns its key.
func parseEntry(dec *json.Decoder, name string) (identity.PublicKey, error) {
	var k identity.PublicKey
	tok, err := dec.Token()
	if err != nil {
		return k, syntaxError(err)
	}
	if tok != json.Delim('{') {
		return k, fmt.Errorf("%w: petname %q: entry is %s, want an object", ErrInvalid, name, describe(tok))
	}
	var keyText *string
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return k, syntaxError(err)
		}
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return k, syntaxError(err)
		}
		if tok != "key" {
			continue // other fields, such as the legacy "may", are ignored
		}
		if keyText != nil {
			return k, fmt.Errorf("%w: petname %q: \"key\" appears twice", ErrInvalid, name)
		}
		var s string
		if raw = bytes.TrimSpace(raw); len(raw) == 0 || raw[0] != '"' || json.Unmarshal(raw, &s) != nil {
			return k, fmt.Errorf("%w: petname %q: \"key\" is not a string", ErrInvalid, name)
		}
		keyText = &s
	}
	if _, err := dec.Token(); err != nil { // the closing brace
		return k, syntaxError(err)
	}
	if keyText == nil {
		return k, fmt.Errorf("%w: petname %q: no \"key\"", ErrInvalid, name)
	}
	k, err = identity.ParsePublicKey(*keyText)
	if err != nil {
		return k, fmt.Errorf("%w: petname %q: %w", ErrInvalid, name, err)
	}
	return k, nil
}

// syntaxError reports malformed JSON.
func syntaxError(err error) error {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return fmt.Errorf("%w: unexpected end of JSON", ErrInvalid)
	}
	return fmt.Errorf("%w: not valid JSON: %w", ErrInvalid, err)
}

// describe names the kind of JSON value that starts with tok.
func describe(tok json.Token) string {
	switch v := tok.(type) {
	case json.Delim:
		if v == '[' {
			return "an array"
		}
		return "an object"
	case string:
		return "a string"
	case bool:
		return "a boolean"
	case nil:
		return "null"
	}
	return "a number"
}
