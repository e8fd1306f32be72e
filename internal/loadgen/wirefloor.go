package loadgen

import (
	"cmp"
	"context"
	"io"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/interlink-go/interlink/internal/loadgen/busclient"
	"github.com/interlink-go/interlink/internal/wire"
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
	c := busclient.New(base, r.cfg.KeepAlive, r.cfg.Senders)
	defer c.Close()
	res, _, err = r.cycles(ctx, c, wireFloorName, "wf")
	return res, err
}

// wireStub returns a handler that serves /send, /recv and /ack in the bus's
// wire format, decoded and encoded by package wire as the bus does, with
// the bus's statuses and reply shapes, and does nothing else: each route
// holds the payload sent to it last, /recv returns it at once or answers
// timeout without waiting, /ack forgets it whatever the key. A body or
// query the bus would refuse gets 400. It stands for no bus: its only use
// is the wire floor.
func wireStub(now func() time.Time) http.Handler {
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
