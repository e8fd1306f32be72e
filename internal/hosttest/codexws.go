//go:build hosttest

package hosttest

import (
	"bufio"
	"crypto/rand"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"sync"
	"testing"
	"time"
)

// codex app-server proxy connects its stdio to the daemon's control
// socket, which speaks JSON-RPC in WebSocket text messages, one message
// each, rather than in lines. startWebSocketRPC makes that look like the
// line protocol of codex app-server over stdio to an [rpcConn].

// WebSocket opcodes (RFC 6455, section 5.2).
const (
	wsContinuation = 0x0
	wsText         = 0x1
	wsClose        = 0x8
	wsPing         = 0x9
	wsPong         = 0xA
)

// wsErrorMethod is the method of the notification that stands for a
// broken WebSocket connection in the lines an [rpcConn] reads.
const wsErrorMethod = "hosttest/websocketError"

// wsMaxMessage bounds one message the test accepts.
const wsMaxMessage = 16 << 20

// startWebSocketRPC starts cmd, whose Stdin, Stdout and Stderr must be
// unset, opens a WebSocket connection over its stdio and returns it as a
// JSON-RPC peer. A goroutine decodes what the process writes until its
// stdout ends, which the process's exit brings about.
func startWebSocketRPC(t testing.TB, name string, cmd *exec.Cmd) *rpcConn {
	t.Helper()
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	pr, pw := io.Pipe()
	cmd.Stdout = pw
	w := &wsWriter{w: stdin}
	c := &rpcConn{stdin: w, stdout: newLineQueue()}
	c.p = start(t, name, cmd)
	go func() {
		<-c.p.done
		pw.Close()
	}()

	var key [16]byte
	rand.Read(key[:])
	fmt.Fprintf(stdin, "GET / HTTP/1.1\r\nHost: localhost\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"+
		"Sec-WebSocket-Key: %s\r\nSec-WebSocket-Version: 13\r\n\r\n", base64.StdEncoding.EncodeToString(key[:]))
	// The handshake is read with the messages, by a goroutine, so that a
	// proxy that never answers fails the test in time.
	handshake := make(chan error, 1)
	go func() {
		br := bufio.NewReader(pr)
		resp, err := http.ReadResponse(br, nil)
		if err == nil && resp.StatusCode != http.StatusSwitchingProtocols {
			err = errors.New(resp.Status)
		}
		handshake <- err
		if err == nil {
			err = w.readMessages(br, c.stdout)
			if !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrClosedPipe) {
				// The next wait for a message reports it.
				msg, _ := json.Marshal(rpcMessage{Method: wsErrorMethod, Params: mustJSON(err.Error())})
				c.stdout.Write(append(msg, '\n'))
			}
		}
		io.Copy(io.Discard, pr)
	}()
	select {
	case err := <-handshake:
		if err != nil {
			t.Fatalf("hosttest: %s: WebSocket handshake: %v", name, err)
		}
	case <-time.After(startTimeout):
		t.Fatalf("hosttest: %s: no WebSocket handshake within %v", name, startTimeout)
	}
	return c
}

// wsWriter sends each Write, one JSON-RPC message with a trailing newline,
// as a masked text message.
type wsWriter struct {
	mu sync.Mutex // serializes frames: the reader answers pings
	w  io.WriteCloser
}

func (w *wsWriter) Write(p []byte) (int, error) {
	n := len(p)
	if n > 0 && p[n-1] == '\n' {
		p = p[:n-1]
	}
	if err := w.frame(wsText, p); err != nil {
		return 0, err
	}
	return n, nil
}

// Close sends a close frame and closes the process's stdin.
func (w *wsWriter) Close() error {
	w.frame(wsClose, nil)
	return w.w.Close()
}

// frame writes one final, masked frame.
func (w *wsWriter) frame(op byte, payload []byte) error {
	header := []byte{0x80 | op}
	switch n := len(payload); {
	case n < 126:
		header = append(header, 0x80|byte(n))
	case n <= 0xFFFF:
		header = append(header, 0x80|126)
		header = binary.BigEndian.AppendUint16(header, uint16(n))
	default:
		header = append(header, 0x80|127)
		header = binary.BigEndian.AppendUint64(header, uint64(n))
	}
	var mask [4]byte
	rand.Read(mask[:])
	header = append(header, mask[:]...)
	masked := make([]byte, len(payload))
	for i, b := range payload {
		masked[i] = b ^ mask[i%4]
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	_, err := w.w.Write(append(header, masked...))
	return err
}

// readMessages decodes frames from r and writes each text message, with a
// newline, to q, until r ends or the server closes the connection.
func (w *wsWriter) readMessages(r io.Reader, q io.Writer) error {
	var msg []byte
	for {
		var h [2]byte
		if _, err := io.ReadFull(r, h[:]); err != nil {
			return err
		}
		op, n := h[0]&0x0F, uint64(h[1]&0x7F)
		switch n {
		case 126:
			var b [2]byte
			if _, err := io.ReadFull(r, b[:]); err != nil {
				return err
			}
			n = uint64(binary.BigEndian.Uint16(b[:]))
		case 127:
			var b [8]byte
			if _, err := io.ReadFull(r, b[:]); err != nil {
				return err
			}
			n = binary.BigEndian.Uint64(b[:])
		}
		if h[1]&0x80 != 0 {
			return errors.New("websocket: masked frame from the server")
		}
		if n > wsMaxMessage || uint64(len(msg))+n > wsMaxMessage {
			return fmt.Errorf("websocket: message over %d bytes", wsMaxMessage)
		}
		payload := make([]byte, n)
		if _, err := io.ReadFull(r, payload); err != nil {
			return err
		}
		switch op {
		case wsText, wsContinuation:
			msg = append(msg, payload...)
			if h[0]&0x80 != 0 {
				q.Write(append(msg, '\n'))
				msg = nil
			}
		case wsPing:
			w.frame(wsPong, payload)
		case wsClose:
			return io.EOF
		}
	}
}

// mustJSON marshals a string.
func mustJSON(s string) json.RawMessage {
	data, _ := json.Marshal(s)
	return data
}
