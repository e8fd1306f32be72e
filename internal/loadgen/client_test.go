package loadgen

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// The reflection-free reader of /recv replies gives what encoding/json
// gives for every reply it takes, and leaves the others to it.
func TestParseBusReplyMatchesJSON(t *testing.T) {
	for _, tc := range []struct {
		reply string
		fast  bool // the fast reader takes it
	}{
		{`{"status":"timeout"}`, true},
		{`{"ack":"K#s\u000000000000000000000001","envelope":{"payload":"s0-1.123.xx","ts":1700000000000},"status":"message"}`, true},
		{`{"ack":"K#s\u000000000000000000000001","envelope":{"payload":{"a":",\"ts\":1}"},"ts":17},"status":"message"}`, true},
		{`{"ack":"K#s\u000000000000000000000001","envelope":{"payload":null,"ts":0},"status":"message"}`, true},
		{`{"ack":"K\"s\u00001","envelope":{"payload":1,"ts":1},"status":"message"}`, false},
		{`{"ack":"K\u0041\u00001","envelope":{"payload":1,"ts":1},"status":"message"}`, false},
		{`{"status":"message","ack":"K\u00001","envelope":{"payload":1,"ts":1}}`, false},
		{`{"ack":"K\u00001","envelope":{"payload":1,"ts":1.5},"status":"message"}`, false},
		{` {"status":"timeout"}`, false},
	} {
		got, ok := parseBusReply([]byte(tc.reply))
		if ok != tc.fast {
			t.Errorf("%s: fast reader took it: %v, want %v", tc.reply, ok, tc.fast)
		}
		if !ok {
			continue
		}
		var want recvReply
		if err := json.Unmarshal([]byte(tc.reply), &want); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%s (-json +fast):\n%s", tc.reply, diff)
		}
	}
}

func TestAppendJSONStringMatchesJSON(t *testing.T) {
	for _, s := range []string{"", "bench-1a2b-rt-0", `q"b\s`, "\x00\x1f", "é", "<&>"} {
		want, _ := json.Marshal(s)
		var back string
		if err := json.Unmarshal(appendJSONString(nil, s), &back); err != nil || back != s {
			t.Errorf("%q: encoded %s, decodes to %q (%v); json.Marshal gives %s", s, appendJSONString(nil, s), back, err, want)
		}
	}
}
