package target

import (
	"io"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/interlink-go/interlink/internal/wire"
)

// WireStub returns a handler that serves /send, /recv and /ack in the bus's
// wire format, decoded and encoded by package wire as the bus does, with
// the bus's statuses and reply shapes, and does nothing else: each route
// holds the payload sent to it last, /recv returns it at once or answers
// timeout without waiting, /ack forgets it whatever the key. A body or
// query the bus would refuse gets 400. It stands for no bus: its only use
// is the wire floor.
func WireStub(now func() time.Time) http.Handler {
	var (
		mu    sync.Mutex
		heads = map[string][]byte{} // guarded by mu
	)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/send":
			body, err := io.ReadAll(io.LimitReader(r.Body, wire.MaxBodyBytes))
			req, derr := wire.DecodeSend(body)
			if err != nil || derr != nil {
				w.WriteHeader(http.StatusBadRequest)
				return
			}
			mu.Lock()
			heads[req.To] = req.Payload
			mu.Unlock()
			w.WriteHeader(http.StatusAccepted)
		case "/recv":
			q, err := wire.DecodeRecvQuery(r.URL.RawQuery, time.Minute)
			if err != nil {
				w.WriteHeader(http.StatusBadRequest)
				return
			}
			mu.Lock()
			payload, ok := heads[q.Me]
			mu.Unlock()
			body := []byte(wire.TimeoutAnswer)
			if ok {
				body, err = wire.RecvMessage(q.Me+"\x00"+"00000000000000000001", wire.Envelope(payload, now().UnixMilli()))
				if err != nil {
					w.WriteHeader(http.StatusInternalServerError)
					return
				}
			}
			h := w.Header()
			h["Content-Type"] = []string{"application/json"}
			h["Content-Length"] = []string{strconv.Itoa(len(body))}
			w.WriteHeader(http.StatusOK)
			w.Write(body)
		case "/ack":
			body, err := io.ReadAll(io.LimitReader(r.Body, wire.MaxBodyBytes))
			req, derr := wire.DecodeAck(body)
			if err != nil || derr != nil {
				w.WriteHeader(http.StatusBadRequest)
				return
			}
			mu.Lock()
			delete(heads, req.Me)
			mu.Unlock()
			w.WriteHeader(http.StatusOK)
		default:
			w.WriteHeader(http.StatusNotFound)
		}
	})
}
