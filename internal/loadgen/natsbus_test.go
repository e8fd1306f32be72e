package loadgen

import (
	"errors"
	"strings"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/interlink-go/interlink/internal/loadgen/target"
	"github.com/interlink-go/interlink/internal/store/natstest"
)

func TestValidateNATS(t *testing.T) {
	tests := []struct {
		name    string
		cfg     Config
		wantErr string // empty: valid
	}{
		{"nats at a url", Config{Store: StoreNATS, NATSURL: "nats://127.0.0.1:4222"}, ""},
		{"two buses", Config{Store: StoreNATS, NATSURL: "nats://127.0.0.1:4222", Buses: 2}, ""},
		{"three buses", Config{Store: StoreNATS, NATSURL: "nats://127.0.0.1:4222", Buses: 3}, ""},
		{"four buses", Config{Store: StoreNATS, NATSURL: "nats://127.0.0.1:4222", Buses: 4}, "want 1 to 3"},
		{"two buses on memory", Config{Buses: 2}, "nats store"},
		{"nats url on bolt", Config{Store: StoreBolt, NATSURL: "nats://127.0.0.1:4222"}, "nats store"},
		{"sync for a server at a url", Config{Store: StoreNATS, NATSURL: "nats://127.0.0.1:4222", NATSSyncAlways: true}, "this process starts"},
		{"nats settings with a bus url", Config{URL: "http://127.0.0.1:1", NATSURL: "nats://127.0.0.1:4222"}, "in-process"},
		{"db with nats", Config{Store: StoreNATS, NATSURL: "nats://127.0.0.1:4222", DBPath: "x.db"}, "bolt"},
	}
	if !target.EmbeddedNATS {
		tests = append(tests, struct {
			name    string
			cfg     Config
			wantErr string
		}{"no server of its own", Config{Store: StoreNATS}, "-tags natsbench"})
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.cfg.Validate()
			switch {
			case tt.wantErr == "" && err != nil:
				t.Fatalf("Validate() = %v, want nil", err)
			case tt.wantErr != "" && err == nil:
				t.Fatalf("Validate() = nil, want an error mentioning %q", tt.wantErr)
			case err != nil && (!errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), tt.wantErr)):
				t.Fatalf("Validate() = %v, want ErrConfig mentioning %q", err, tt.wantErr)
			}
		})
	}
}

// Runs on the nats store, on one bus to three, complete without errors, report
// what ran where, and leave no stream behind on the server.
func TestRunOnNATS(t *testing.T) {
	srv := natstest.Start(t, nil)
	for _, tc := range []struct {
		mode  Mode
		buses int
		want  string
	}{
		{ModeRoundtrip, 1, "in-process bus, nats store on NATS at "},
		{ModeWake, 2, "two in-process buses, nats store on NATS at "},
		{ModePipeline, 2, "two in-process buses"},
		{ModePipeline, 3, "three in-process buses"},
	} {
		t.Run(string(tc.mode), func(t *testing.T) {
			cfg := Config{Mode: tc.mode, Store: StoreNATS, NATSURL: srv.URL(), Buses: tc.buses, Duration: short,
				Senders: 2, Receivers: 2, Routes: 2}
			if tc.mode == ModeRoundtrip || tc.mode == ModeWake {
				cfg.Senders, cfg.Receivers, cfg.Routes = 1, 1, 0
			}
			rep, err := Run(t.Context(), cfg, nil)
			if err != nil {
				t.Fatalf("Run: %v", err)
			}
			res := rep.Results[len(rep.Results)-1]
			if res.Ops == 0 || res.Errors != 0 {
				t.Fatalf("%s: %d ops, %d errors (%s)", tc.mode, res.Ops, res.Errors, res.FirstError)
			}
			if !strings.HasPrefix(rep.Target, tc.want) {
				t.Errorf("target %q, want it to start with %q", rep.Target, tc.want)
			}
		})
	}

	nc, err := nats.Connect(srv.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	for name := range js.StreamNames(t.Context()).Name() {
		t.Errorf("stream %s left on the server", name)
	}
}
