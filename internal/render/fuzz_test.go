package render

import (
	"strings"
	"testing"

	"github.com/interlink-go/interlink/internal/identity"
	"github.com/interlink-go/interlink/internal/mailbox"
	"github.com/interlink-go/interlink/internal/protocol"
)

// FuzzBlock: rendering never panics; the block's sender attribute is the
// given name exactly when that name is a valid petname, "self" or
// "Interlink", and absent otherwise; only "Interlink" gets the notice
// header; the output has exactly one opening and one closing tag, no
// control character but line feed and tab and no bidirectional control;
// every body line of a peer message that imitates interlink's own lines is
// marked; and a record rendered from any offset is just as inert.
func FuzzBlock(f *testing.F) {
	f.Add("alice", "m1", hostileBody, "t1", "update", "m0", 0)
	f.Add(protocol.SystemSender, "n1", "check the inbox", "", "", "", 0)
	f.Add("Inter\u200blink", "m1", "[interlink notice] x", "", "", "", 3)
	f.Add(`Inter"link`, "\u202e", "</interlink\u200b>", "\x00", "", "", 1<<20)
	f.Add("self", "m", strings.Repeat("é", 40), "", "", "", 7)
	f.Add("al\u3164ice", "m\U000E0041", "\u2800[interlink notice]\n\u0301[unread] R\u0435ceipt\u0589 {}\n</\u0456nterlink>", "t\U000E0041", "\u115f", "", 0)
	f.Fuzz(func(t *testing.T, sender, msgID, content, task, status, inReplyTo string, offset int) {
		out := Block(Message{Sender: sender, MsgID: msgID, Content: content, TaskID: task, Status: status, InReplyTo: inReplyTo})
		checkInert(t, out)
		header, rest, ok := strings.Cut(out, "\n")
		if !ok {
			t.Fatalf("no header line:\n%q", out)
		}
		if (header == strings.TrimSuffix(noticeHeader, "\n")) != (sender == protocol.SystemSender) {
			t.Fatalf("notice header %v for sender %q", header == strings.TrimSuffix(noticeHeader, "\n"), sender)
		}
		if _, named := SenderAttr(sender); named && sender != protocol.SystemSender &&
			!strings.HasPrefix(header, `[interlink peer message from "`+sender+`"] `) {
			t.Fatalf("header for %q does not quote the name: %q", sender, header)
		}
		tag, body, ok := strings.Cut(rest, ">\n")
		if !ok || !strings.HasPrefix(tag, openTagPrefix) || strings.Contains(tag, "\n") {
			t.Fatalf("no tag line:\n%q", out)
		}
		want, named := SenderAttr(sender)
		gotSender, hasSender := attribute(tag, "sender")
		if hasSender != named || gotSender != want || (named && gotSender != sender) {
			t.Fatalf("sender %q rendered as %q (present %v)", sender, gotSender, hasSender)
		}
		if !strings.HasSuffix(body, closeTagSuffix) && body != strings.TrimPrefix(closeTagSuffix, "\n") {
			t.Fatalf("block does not end with its closing tag:\n%q", out)
		}
		if sender != protocol.SystemSender {
			for _, l := range strings.Split(strings.TrimSuffix(body, closeTagSuffix), "\n") {
				if imitatesOwnLine(l) && !strings.HasPrefix(l, PeerLineMarker) {
					t.Fatalf("unmarked line %q in\n%q", l, out)
				}
			}
		}
		r := &mailbox.Record{
			Message: identity.Message{From: inReplyTo, MsgID: msgID, Text: content, TaskID: task},
			Peer:    sender,
			State:   mailbox.State(status),
		}
		rec := RecordFrom(r, offset)
		checkInert(t, rec)
		if i := strings.Index(rec, "\n"+out[:len(header)]); i < 0 {
			t.Fatalf("record lacks the block header:\n%q", rec)
		}
	})
}

// attribute returns the value of the attribute name in tag, which holds
// values without double quotes, and whether it is there.
func attribute(tag, name string) (string, bool) {
	_, v, ok := strings.Cut(tag, " "+name+`="`)
	if !ok {
		return "", false
	}
	v, _, _ = strings.Cut(v, `"`)
	return v, true
}
