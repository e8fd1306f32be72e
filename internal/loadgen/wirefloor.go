package loadgen

import (
	"bytes"
	"cmp"
	"context"
	"io"
	"net/http"
	"strconv"
	"sync"
	"time"
)

// wireFloorName names the result of [run.wireFloor].
const wireFloorName = "wirefloor"

// wireFloor measures the roundtrip scenario, with the same client settings
// and senders, against the least a bus could be: [wireStub], served in
// this process like the floor. Beside the floor, whose server answers every
// request with an empty 200, it tells how much of a bus's distance from
// the floor any server speaking the bus's wire format must pay (reply
// bodies, their headers, parsing them in the load generator) and how much
// is the bus's own work.
func (r *run) wireFloor(ctx context.Context) (res Result, err error) {
	base, stop, err := r.serveFloor(wireStub(time.Now))
	if err != nil {
		return Result{Name: wireFloorName}, err
	}
	defer func() { err = cmp.Or(err, stop()) }()
	c := newClient(base, r.cfg.KeepAlive, r.cfg.Senders)
	defer c.close()
	res, _, err = r.cycles(ctx, c, wireFloorName, "wf")
	return res, err
}

// wireStub returns a handler that serves /send, /recv and /ack in the bus's
// wire format, with the bus's statuses, headers and reply shapes, and does
// nothing else: each route holds the payload sent to it last, /recv returns
// it at once or answers timeout without waiting, /ack forgets it whatever
// the key. It checks nothing and understands only the bodies this package
// sends; anything else gets 400. It stands for no bus: its only use is the
// wire floor.
func wireStub(now func() time.Time) http.Handler {
	var (
		mu    sync.Mutex
		heads = map[string][]byte{} // guarded by mu
	)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/send":
			route, payload, ok := readBody(r, `{"to":"`, `","payload":`)
			if !ok {
				w.WriteHeader(http.StatusBadRequest)
				return
			}
			mu.Lock()
			heads[route] = payload
			mu.Unlock()
			w.WriteHeader(http.StatusAccepted)
		case "/recv":
			route := r.URL.Query().Get("me")
			if !plainRoute(route) {
				w.WriteHeader(http.StatusBadRequest)
				return
			}
			mu.Lock()
			payload, ok := heads[route]
			mu.Unlock()
			body := []byte(`{"status":"timeout"}`)
			if ok {
				body = make([]byte, 0, len(route)+len(payload)+96)
				body = append(body, `{"ack":"`...)
				body = append(body, route...)
				body = append(body, `\u000000000000000000000001","envelope":{"payload":`...)
				body = append(body, payload...)
				body = append(body, `,"ts":`...)
				body = strconv.AppendInt(body, now().UnixMilli(), 10)
				body = append(body, `},"status":"message"}`...)
			}
			h := w.Header()
			h["Content-Type"] = []string{"application/json"}
			h["Content-Length"] = []string{strconv.Itoa(len(body))}
			w.WriteHeader(http.StatusOK)
			w.Write(body)
		case "/ack":
			route, _, ok := readBody(r, `{"me":"`, `","ack":`)
			if !ok {
				w.WriteHeader(http.StatusBadRequest)
				return
			}
			mu.Lock()
			delete(heads, route)
			mu.Unlock()
			w.WriteHeader(http.StatusOK)
		default:
			w.WriteHeader(http.StatusNotFound)
		}
	})
}

// readBody reads a request body of the form head ROUTE mid VALUE } and
// splits it into the route, which must be plain ([plainRoute]), and the
// value.
func readBody(r *http.Request, head, mid string) (route string, value []byte, ok bool) {
	body, err := io.ReadAll(io.LimitReader(r.Body, maxReply))
	if err != nil {
		return "", nil, false
	}
	rest, ok := bytes.CutPrefix(body, []byte(head))
	if !ok || len(rest) == 0 || rest[len(rest)-1] != '}' {
		return "", nil, false
	}
	name, value, ok := bytes.Cut(rest[:len(rest)-1], []byte(mid))
	if !ok || !plainRoute(string(name)) {
		return "", nil, false
	}
	return string(name), value, true
}

// plainRoute reports whether route can be written into JSON as it is: no
// quote, backslash or control character.
func plainRoute(route string) bool {
	for i := 0; i < len(route); i++ {
		if c := route[i]; c < 0x20 || c == '"' || c == '\\' {
			return false
		}
	}
	return true
}
