package natstest

import (
	"errors"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

func connect(t *testing.T, url string) (*nats.Conn, jetstream.JetStream) {
	t.Helper()
	nc, err := nats.Connect(url)
	if err != nil {
		t.Fatalf("connect to %s: %v", url, err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	return nc, js
}

func TestRestartKeepsURLAndStreams(t *testing.T) {
	t.Parallel()
	srv := Start(t, nil)
	url := srv.URL()
	nc, js := connect(t, url)
	if got := nc.MaxPayload(); got != DefaultMaxPayload {
		t.Fatalf("max payload = %d, want %d", got, DefaultMaxPayload)
	}
	if _, err := js.CreateStream(t.Context(), jetstream.StreamConfig{Name: "S", Subjects: []string{"s"}}); err != nil {
		t.Fatal(err)
	}
	ack, err := js.Publish(t.Context(), "s", []byte("kept"))
	if err != nil {
		t.Fatal(err)
	}
	nc.Close()

	srv.Restart()
	if srv.URL() != url {
		t.Fatalf("URL after restart = %s, want %s", srv.URL(), url)
	}
	_, js = connect(t, url)
	st, err := js.Stream(t.Context(), "S")
	if err != nil {
		t.Fatalf("stream after restart: %v", err)
	}
	msg, err := st.GetMsg(t.Context(), ack.Sequence)
	if err != nil || string(msg.Data) != "kept" {
		t.Fatalf("message after restart: %q, %v", msg.Data, err)
	}
}

func TestShutdownRefusesClients(t *testing.T) {
	t.Parallel()
	srv := Start(t, nil)
	srv.Shutdown()
	srv.Shutdown() // a second call does nothing
	if nc, err := nats.Connect(srv.URL()); err == nil {
		nc.Close()
		t.Fatal("connected to a stopped server")
	}
}

func TestNoJetStream(t *testing.T) {
	t.Parallel()
	srv := Start(t, &Options{NoJetStream: true})
	_, js := connect(t, srv.URL())
	if _, err := js.AccountInfo(t.Context()); !errors.Is(err, jetstream.ErrJetStreamNotEnabled) {
		t.Fatalf("account info: %v, want JetStream not enabled", err)
	}
}

func TestUserAndPassword(t *testing.T) {
	t.Parallel()
	srv := Start(t, &Options{User: "u", Password: "p", MaxPayload: 1 << 20})
	if nc, err := nats.Connect(srv.URL()); !errors.Is(err, nats.ErrAuthorization) {
		if err == nil {
			nc.Close()
		}
		t.Fatalf("connect without credentials: %v, want an authorization error", err)
	}
	nc, _ := connect(t, srv.UserURL("u", "p"))
	if got := nc.MaxPayload(); got != 1<<20 {
		t.Fatalf("max payload = %d, want %d", got, 1<<20)
	}
}
