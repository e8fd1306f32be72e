package pairing

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/interlink-go/interlink/internal/identity"
	"github.com/interlink-go/interlink/internal/untrusted"
)

// Bounds of the two lists of a [State]; see the package documentation for
// how each is enforced.
const (
	// InboundCap is the most pending inbound requests kept. At the cap a
	// knock from a new key is refused with [ErrInboundFull]; a pending
	// request is never evicted.
	InboundCap = 64
	// OutboundCap is the most outstanding outbound requests kept. At the cap
	// the oldest is evicted to make room.
	OutboundCap = 64
)

// Request is one pairing request, received or sent.
//
// For an inbound request (a knock this session received) Key is the
// requester's key, Name the name it claimed (cleaned, unverified),
// RequestID the knock's msg_id, and ReplyTo the requesting session's route,
// where the confirmation goes.
//
// For an outbound request (a knock this session sent) Key is the target's
// key, Name the petname the target will get locally once it accepts,
// RequestID the id the acceptance must carry in in_reply_to, and ReplyTo the
// target session the knock was sent to.
type Request struct {
	Key       string `json:"key"`
	Name      string `json:"name"`
	RequestID string `json:"request_id"`
	ReplyTo   string `json:"reply_to"`
}

// Job is a signed pairing message and Route, the route it goes to, which
// names one session of the recipient: what [RequestMessage] and
// [AcceptMessage] build and the session's outbox sends.
type Job struct {
	Route string           `json:"route"`
	Msg   identity.Message `json:"msg"`
}

// State is the pairing state of one identity and session.
//
// Inbound holds the pending requests received and Outbound the requests
// sent and not yet accepted, oldest first in each. A State returned by
// [Store.Load] is a copy; changing it changes nothing on disk.
type State struct {
	Inbound  []Request
	Outbound []Request

	// queued holds the jobs an earlier version queued in the file, as
	// they were read; every write keeps them until [Store.MoveQueued]
	// hands them to the outbox.
	queued []json.RawMessage
}

// fileState fixes the key order of the file and makes empty lists encode as
// [] rather than null. "queued" is the list of pairing messages earlier
// versions kept here; it is written, empty once moved, so that they can
// still read the file.
type fileState struct {
	Inbound  []Request         `json:"inbound"`
	Outbound []Request         `json:"outbound"`
	Queued   []json.RawMessage `json:"queued"`
}

// encode returns st as compact JSON in the file's format.
func encode(st State) ([]byte, error) {
	f := fileState{
		Inbound:  nonNil(st.Inbound),
		Outbound: nonNil(st.Outbound),
		Queued:   nonNil(st.queued),
	}
	return identity.Marshal(f)
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// decode parses the file contents. A missing file (exists false) is the
// empty state. Every error wraps [ErrCorrupt]. The "queued" list of an
// earlier version is optional and kept as read (see [State]).
func decode(data []byte, exists bool) (st State, err error) {
	if !exists {
		return State{}, nil
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(data, &top); err != nil {
		return State{}, fmt.Errorf("%w: %w", ErrCorrupt, err)
	}
	if top == nil {
		return State{}, fmt.Errorf("%w: not an object", ErrCorrupt)
	}
	inbound, err := list(top, "inbound")
	if err != nil {
		return State{}, err
	}
	outbound, err := list(top, "outbound")
	if err != nil {
		return State{}, err
	}
	if _, ok := top["queued"]; ok {
		if st.queued, err = list(top, "queued"); err != nil {
			return State{}, err
		}
	}
	if st.Inbound, err = decodeRequests("inbound", inbound); err != nil {
		return State{}, err
	}
	if st.Outbound, err = decodeRequests("outbound", outbound); err != nil {
		return State{}, err
	}
	return st, nil
}

// list returns the elements of the array under key, which must be present
// and an array (null is not).
func list(top map[string]json.RawMessage, key string) ([]json.RawMessage, error) {
	raw, ok := top[key]
	if !ok {
		return nil, fmt.Errorf("%w: missing %q", ErrCorrupt, key)
	}
	raw = bytes.TrimLeft(raw, " \t\r\n")
	if len(raw) == 0 || raw[0] != '[' {
		return nil, fmt.Errorf("%w: %q is not a list", ErrCorrupt, key)
	}
	var elems []json.RawMessage
	if err := json.Unmarshal(raw, &elems); err != nil {
		return nil, fmt.Errorf("%w: %q: %w", ErrCorrupt, key, err)
	}
	return elems, nil
}

// object decodes raw as a JSON object. Keys are matched exactly, as other
// implementations reading the file do (encoding/json's struct decoding would
// also accept "KEY" for "key").
func object(raw json.RawMessage) (map[string]json.RawMessage, error) {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(raw, &obj); err != nil {
		return nil, err
	}
	if obj == nil {
		return nil, errors.New("not an object")
	}
	return obj, nil
}

// str returns the string under key in obj; a missing key, null or any other
// type is an error.
func str(obj map[string]json.RawMessage, key string) (string, error) {
	raw, ok := obj[key]
	if !ok {
		return "", fmt.Errorf("missing %s", key)
	}
	raw = bytes.TrimLeft(raw, " \t\r\n")
	if len(raw) == 0 || raw[0] != '"' {
		return "", fmt.Errorf("%s is not a string", key)
	}
	var v string
	if err := json.Unmarshal(raw, &v); err != nil {
		return "", fmt.Errorf("%s: %w", key, err)
	}
	return v, nil
}

// decodeRequests decodes a list of requests; all four fields are required
// strings. Unknown fields are ignored.
func decodeRequests(list string, elems []json.RawMessage) ([]Request, error) {
	reqs := make([]Request, 0, len(elems))
	for i, raw := range elems {
		r, err := decodeRequest(raw)
		if err != nil {
			return nil, fmt.Errorf("%w: %s[%d]: %w", ErrCorrupt, list, i, err)
		}
		reqs = append(reqs, r)
	}
	return reqs, nil
}

func decodeRequest(raw json.RawMessage) (Request, error) {
	obj, err := object(raw)
	if err != nil {
		return Request{}, err
	}
	var r Request
	for _, f := range []struct {
		key string
		dst *string
	}{{"key", &r.Key}, {"name", &r.Name}, {"request_id", &r.RequestID}, {"reply_to", &r.ReplyTo}} {
		if *f.dst, err = str(obj, f.key); err != nil {
			return Request{}, err
		}
	}
	return r, nil
}

// decodeJob decodes one queued job. The message is decoded as strictly as
// one arriving from a bus.
func decodeJob(raw json.RawMessage) (Job, error) {
	obj, err := object(raw)
	if err != nil {
		return Job{}, err
	}
	r, err := str(obj, "route")
	if err != nil {
		return Job{}, err
	}
	msg, ok := obj["msg"]
	if !ok {
		return Job{}, errors.New("missing msg")
	}
	m, err := identity.DecodeMessage(msg)
	if err != nil {
		return Job{}, err
	}
	return Job{Route: r, Msg: m}, nil
}

// probeMsgID returns the msg_id of a job that did not decode, if it can be
// read at all, cleaned and bounded for a log line.
func probeMsgID(raw json.RawMessage) string {
	var p struct {
		Msg struct {
			MsgID string `json:"msg_id"`
		} `json:"msg"`
	}
	_ = json.Unmarshal(raw, &p) // best effort: whatever was filled in is used
	return untrusted.Name(p.Msg.MsgID)
}

// upsert returns list with r in it: an entry with r's key is removed, then
// the oldest entries are evicted while the list is at limit, then r is
// appended.
func upsert(list []Request, r Request, limit int) []Request {
	list = slices.DeleteFunc(list, func(e Request) bool { return e.Key == r.Key })
	if n := len(list) - limit + 1; n > 0 {
		list = slices.Delete(list, 0, n)
	}
	return append(list, r)
}

// receive returns list with the inbound request r in it, and whether r's
// key is new to the list. A request with r's key is replaced where it
// stands; a new key is appended, unless the list already holds limit
// requests, which is [ErrInboundFull] and leaves list as it was.
func receive(list []Request, r Request, limit int) ([]Request, bool, error) {
	if i := slices.IndexFunc(list, func(e Request) bool { return e.Key == r.Key }); i >= 0 {
		list[i] = r
		return list, false, nil
	}
	if len(list) >= limit {
		return list, false, fmt.Errorf("%w (%d pending)", ErrInboundFull, len(list))
	}
	return append(list, r), true, nil
}

// removeKey returns list without the entries for key, and whether any was
// removed.
func removeKey(list []Request, key string) ([]Request, bool) {
	n := len(list)
	list = slices.DeleteFunc(list, func(e Request) bool { return e.Key == key })
	return list, len(list) != n
}
