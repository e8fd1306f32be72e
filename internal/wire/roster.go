package wire

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/interlink-go/interlink/internal/identity"
)

// The frame of a /roster answer: {"roster":[ENTRY,ENTRY,...]}, each entry
// {"age_ms":N,FIELDS} with FIELDS the members of an announcement
// ([Announce.Fields]) and N the milliseconds since it arrived. A bus
// measures and writes an answer piece by piece, so that no listing copies
// the roster.
const (
	RosterOpen  = `{"roster":[`
	RosterClose = `]}`
	// RosterEntryClose ends an entry, after its fields.
	RosterEntryClose = `}`
	// RosterEntryOverhead is the most one entry adds to an answer besides
	// its fields: the age of up to 19 digits (an int64), the punctuation
	// around it, and the comma that separates it from the next entry.
	RosterEntryOverhead = len(rosterAgePrefix) + 19 + len(`,`) + len(RosterEntryClose) + len(`,`)
)

// rosterAgePrefix starts every entry.
const rosterAgePrefix = `{"age_ms":`

// AppendRosterEntryHead appends what precedes an entry's fields in a
// /roster answer: the comma after the entry before it unless it is the
// first, its age, and the comma before its fields unless it has none. The
// fields and [RosterEntryClose] follow.
func AppendRosterEntryHead(dst []byte, first bool, ageMs int64, hasFields bool) []byte {
	if !first {
		dst = append(dst, ',')
	}
	dst = append(dst, rosterAgePrefix...)
	dst = strconv.AppendInt(dst, ageMs, 10)
	if hasFields {
		dst = append(dst, ',')
	}
	return dst
}

// RosterEntryLen returns how many bytes an entry with fields of fieldsLen
// bytes adds to a /roster answer; see [AppendRosterEntryHead].
func RosterEntryLen(first bool, ageMs int64, fieldsLen int) int {
	var digits [20]byte
	n := len(rosterAgePrefix) + len(strconv.AppendInt(digits[:0], ageMs, 10)) + len(RosterEntryClose)
	if !first {
		n++
	}
	if fieldsLen > 0 {
		n += len(`,`) + fieldsLen
	}
	return n
}

// RosterElements returns the raw elements of the "roster" array in body, a
// reply to GET /roster: a JSON object whose member "roster" (matched
// exactly; the last one counts if it appears twice) is an array.
//
// Anyone who can reach a relay can put anything on its roster, so one
// element must never spoil the others. The reply's outer structure, the
// object and the array, is checked here, and each element only delimited:
// brackets must balance and strings must end, but what lies between is
// left for the announcement decoder, which rejects the element alone. In
// particular no depth limit applies while delimiting, so an element nested
// deeper than a JSON decoder accepts (encoding/json stops at 10,000 levels)
// is rejected by itself instead of failing the whole reply.
func RosterElements(body []byte) ([]json.RawMessage, error) {
	s := &jsonScanner{b: body}
	if !s.consume('{') {
		if !json.Valid(body) {
			return nil, errors.New("invalid roster JSON: the reply is not JSON")
		}
		return nil, errors.New("expected a roster array: the reply is not a JSON object")
	}
	var roster []json.RawMessage
	found := false
	for first := true; ; first = false {
		if s.consume('}') {
			break
		}
		if !first && !s.consume(',') {
			return nil, s.syntax("expected , or } in the reply object")
		}
		start, end, err := s.value()
		if err != nil {
			return nil, err
		}
		var key string
		if body[start] != '"' || json.Unmarshal(body[start:end], &key) != nil {
			return nil, s.syntax("expected a member name")
		}
		if !s.consume(':') {
			return nil, s.syntax("expected : after a member name")
		}
		if key != "roster" {
			if _, _, err := s.value(); err != nil {
				return nil, err
			}
			continue
		}
		elems, err := s.array()
		if err != nil {
			return nil, err
		}
		roster, found = elems, true
	}
	s.space()
	if s.i != len(body) {
		return nil, s.syntax("data after the reply object")
	}
	if !found {
		return nil, errors.New("expected a roster array: the reply has no roster member")
	}
	return roster, nil
}

// jsonScanner delimits JSON values in b from position i on.
type jsonScanner struct {
	b []byte
	i int
}

func (s *jsonScanner) syntax(what string) error {
	return fmt.Errorf("invalid roster JSON: %s at byte %d", what, s.i)
}

// space skips JSON white space.
func (s *jsonScanner) space() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

// consume skips white space, then c if it comes next, and reports whether
// it did.
func (s *jsonScanner) consume(c byte) bool {
	s.space()
	if s.i < len(s.b) && s.b[s.i] == c {
		s.i++
		return true
	}
	return false
}

// array reads an array and returns its elements.
func (s *jsonScanner) array() ([]json.RawMessage, error) {
	if !s.consume('[') {
		return nil, errors.New("expected a roster array: the roster member is not an array")
	}
	elems := []json.RawMessage{}
	for first := true; ; first = false {
		if s.consume(']') {
			return elems, nil
		}
		if !first && !s.consume(',') {
			return nil, s.syntax("expected , or ] in the roster array")
		}
		start, end, err := s.value()
		if err != nil {
			return nil, err
		}
		elems = append(elems, json.RawMessage(s.b[start:end]))
	}
}

// value skips white space and one value, and returns where the value
// starts and ends. Containers are matched bracket for bracket without a
// depth limit; scalars and the content of containers are not validated.
func (s *jsonScanner) value() (start, end int, err error) {
	s.space()
	start = s.i
	if s.i >= len(s.b) {
		return 0, 0, s.syntax("unexpected end")
	}
	switch s.b[s.i] {
	case '"':
		if err := s.str(); err != nil {
			return 0, 0, err
		}
		return start, s.i, nil
	case '{', '[':
		var open []byte // the closing bracket each open container needs
		for {
			if s.i >= len(s.b) {
				return 0, 0, s.syntax("unexpected end")
			}
			switch c := s.b[s.i]; c {
			case '"':
				if err := s.str(); err != nil {
					return 0, 0, err
				}
				continue
			case '{':
				open = append(open, '}')
			case '[':
				open = append(open, ']')
			case '}', ']':
				if len(open) == 0 || open[len(open)-1] != c {
					return 0, 0, s.syntax("unbalanced brackets")
				}
				open = open[:len(open)-1]
			}
			s.i++
			if len(open) == 0 {
				return start, s.i, nil
			}
		}
	case ',', ':', '}', ']':
		return 0, 0, s.syntax("expected a value")
	}
	// A number or literal runs to the next delimiter.
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ',', '}', ']', ':', ' ', '\t', '\n', '\r', '"', '{', '[':
			return start, s.i, nil
		}
		s.i++
	}
	return start, s.i, nil
}

// str skips a string, starting at its opening quote.
func (s *jsonScanner) str() error {
	s.i++
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case '\\':
			s.i += 2
			continue
		case '"':
			s.i++
			return nil
		}
		s.i++
	}
	return s.syntax("unterminated string")
}

// MaxRosterKeys is the most keys one filtered /roster query may ask for.
// An agent asks for the one peer it sends to; the bound keeps the query
// within any proxy's line limit (each key is 43 characters) and the work
// of one lookup small.
const MaxRosterKeys = 32

// RosterQuery is the query of GET /roster. Without keys the answer is the
// whole roster, as the original serves it; with keys, only the entries
// whose pubkey member is one of them.
type RosterQuery struct {
	// Keys holds the asked keys in their canonical text form, sorted and
	// without duplicates; nil means the whole roster.
	Keys []string
}

// DecodeRosterQuery parses a /roster query with form rules. Only "keys"
// is read: a comma-separated list of 1 to [MaxRosterKeys] public keys,
// given once. Other parameters are ignored, as they always were. Its
// errors wrap [ErrQuery].
func DecodeRosterQuery(raw string) (RosterQuery, error) {
	if raw == "" {
		return RosterQuery{}, nil
	}
	q, err := url.ParseQuery(raw)
	if err != nil {
		return RosterQuery{}, fmt.Errorf("%w: %v", ErrQuery, err)
	}
	vals, ok := q["keys"]
	if !ok {
		return RosterQuery{}, nil
	}
	if len(vals) > 1 {
		return RosterQuery{}, fmt.Errorf("%w: keys given twice; list them once, separated by commas", ErrQuery)
	}
	if vals[0] == "" {
		return RosterQuery{}, fmt.Errorf("%w: keys is empty; omit it to list the whole roster", ErrQuery)
	}
	parts := strings.Split(vals[0], ",")
	if len(parts) > MaxRosterKeys {
		return RosterQuery{}, fmt.Errorf("%w: %d keys asked, at most %d", ErrQuery, len(parts), MaxRosterKeys)
	}
	keys := make([]string, 0, len(parts))
	for i, p := range parts {
		k, err := identity.ParsePublicKey(p)
		if err != nil {
			return RosterQuery{}, fmt.Errorf("%w: key %d of keys is not a public key: %v", ErrQuery, i+1, err)
		}
		keys = append(keys, k.String())
	}
	slices.Sort(keys)
	return RosterQuery{Keys: slices.Compact(keys)}, nil
}
