package main

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/rogpeppe/go-internal/testscript"
	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/interlink-go/interlink/internal/bus"
	"github.com/interlink-go/interlink/internal/identity"
	"github.com/interlink-go/interlink/internal/relay"
	"github.com/interlink-go/interlink/internal/setup"
	"github.com/interlink-go/interlink/internal/store"
)

// doctorCmds are the script commands of the doctor scripts:
//
//	bus VAR [MAXVALUE]         serve an in-memory bus on 127.0.0.1 until
//	                           the script ends; its URL goes into $VAR.
//	                           With MAXVALUE its store takes values of at
//	                           most that many bytes, as a NATS store on a
//	                           server with a small max_payload does
//	skewedrelay VAR SECONDS    serve a relay whose Date header is SECONDS
//	                           ahead (negative: behind) and whose roster is
//	                           empty; its URL goes into $VAR
//	announce URL KEYFILE SESSION
//	                           put SESSION of KEYFILE's identity on the
//	                           roster of the bus at URL
//	jsonschema SCHEMA FILE     require FILE (or "stdout") to be valid
//	                           against the JSON Schema in SCHEMA
//	replacehook FILE BIN       make the Stop hook in the hooks.json FILE run
//	                           BIN
var doctorCmds = map[string]func(ts *testscript.TestScript, neg bool, args []string){
	"bus":         cmdBus,
	"skewedrelay": cmdSkewedRelay,
	"announce":    cmdAnnounce,
	"jsonschema":  cmdJSONSchema,
	"replacehook": cmdReplaceHook,
}

// limitedStore is a store in memory that says it takes values of at most
// max bytes.
type limitedStore struct {
	*store.Memory
	max int64
}

func (l limitedStore) MaxValue() int64 { return l.max }

func cmdBus(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 1 || len(args) > 2 {
		ts.Fatalf("usage: bus VAR [MAXVALUE]")
	}
	var st store.Store = store.NewMemory(nil)
	if len(args) == 2 {
		n, err := strconv.ParseInt(args[1], 10, 64)
		ts.Check(err)
		st = limitedStore{Memory: store.NewMemory(nil), max: n}
	}
	srv := httptest.NewServer(bus.New(st, &bus.Options{Version: "v-script"}))
	ts.Defer(srv.Close)
	ts.Setenv(args[0], srv.URL)
}

func cmdSkewedRelay(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: skewedrelay VAR SECONDS")
	}
	d, err := time.ParseDuration(args[1] + "s")
	ts.Check(err)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Date", time.Now().Add(d).UTC().Format(http.TimeFormat))
		w.Header().Set("Content-Type", "application/json")
		switch r.URL.Path {
		case "/healthz":
			_, _ = w.Write([]byte(`{"status":"ok"}`))
		case "/roster":
			_, _ = w.Write([]byte(`{"roster":[]}`))
		default:
			http.NotFound(w, r)
		}
	}))
	ts.Defer(srv.Close)
	ts.Setenv(args[0], srv.URL)
}

func cmdAnnounce(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 3 {
		ts.Fatalf("usage: announce URL KEYFILE SESSION")
	}
	s, err := identity.LoadKeyFile(ts.MkAbs(args[1]))
	ts.Check(err)
	a := s.Announce("script", identity.SessionInfo{SessionID: args[2]}, identity.Millis(time.Now()))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ts.Check(relay.New(args[0], nil).Announce(ctx, a))
}

func cmdJSONSchema(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 2 {
		ts.Fatalf("usage: jsonschema SCHEMA FILE")
	}
	c := jsonschema.NewCompiler()
	sch, err := c.Compile(ts.MkAbs(args[0]))
	ts.Check(err)
	inst, err := jsonschema.UnmarshalJSON(strings.NewReader(ts.ReadFile(args[1])))
	ts.Check(err)
	err = sch.Validate(inst)
	switch {
	case neg && err == nil:
		ts.Fatalf("%s is valid against %s", args[1], args[0])
	case !neg && err != nil:
		ts.Fatalf("%s is not valid against %s: %v", args[1], args[0], err)
	}
}

// cmdReplaceHook is the script command "replacehook FILE BIN": it makes the
// Stop hook of the hooks.json FILE run "BIN wait", keeping the rest.
func cmdReplaceHook(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: replacehook FILE BIN")
	}
	var hc struct {
		Hooks map[string][]struct {
			Matcher string           `json:"matcher,omitempty"`
			Hooks   []map[string]any `json:"hooks"`
		} `json:"hooks"`
	}
	ts.Check(json.Unmarshal([]byte(ts.ReadFile(args[0])), &hc))
	stop := hc.Hooks["Stop"]
	if len(stop) == 0 || len(stop[0].Hooks) == 0 {
		ts.Fatalf("%s has no Stop hook", args[0])
	}
	stop[0].Hooks[0]["command"] = setup.ShellQuote(args[1]) + " wait"
	data, err := json.MarshalIndent(hc, "", "  ")
	ts.Check(err)
	ts.Check(os.WriteFile(ts.MkAbs(args[0]), data, 0o644))
}
