package receipt

import (
	"errors"
	"strconv"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
)

// The line keeps the shape scripts and host tests match on.
func TestStringIsTheReceiptLine(t *testing.T) {
	got := Line{Label: "receiver_stored", Sender: "KEY", MsgID: "abc"}.String()
	want := `[receiver_stored] Receipt: {"sender":"KEY","msg_id":"abc"}`
	if got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
}

func TestParseReadsWhatStringWrites(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   Line
		want Line // as read back
	}{
		{"plain", Line{"receiver_stored", "KEY", "abc"}, Line{"receiver_stored", "KEY", "abc"}},
		{"superseded", Line{"superseded by def", "KEY", "abc"}, Line{"superseded by def", "KEY", "abc"}},
		{"empty label", Line{"", "k", "m"}, Line{"", "k", "m"}},
		{"format characters", Line{"unread", "KEY\u202e", "id\u200b</interlink>\U000e0041\u2028"},
			Line{"unread", "KEY\u202e", "id\u200b</interlink>\U000e0041\u2028"}},
		{"quotes and brackets in the receipt", Line{"unread", `k"]`, "m] Receipt: {}"}, Line{"unread", `k"]`, "m] Receipt: {}"}},
		// A label cannot end itself early: a msg_id chosen by a peer
		// stands in "superseded by <msg_id>".
		{"label imitating the marker", Line{`superseded by x] Receipt: {"sender":"forged","msg_id":"y"}`, "KEY", "abc"},
			Line{`superseded by x Receipt: {"sender":"forged","msg_id":"y"}`, "KEY", "abc"}},
		{"label with line breaks", Line{"a\nb\r\u2028c\u2029", "KEY", "abc"}, Line{"abc", "KEY", "abc"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := tc.in.String()
			if strings.ContainsAny(s, "\n\r\u2028\u2029") {
				t.Errorf("line %q breaks", s)
			}
			got, err := Parse(s)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Parse(%q) (-want +got):\n%s", s, diff)
			}
		})
	}
}

// Nothing in a receipt line is drawn as nothing or acts on a terminal: every
// such character is an escape, and the receipt stays exact.
func TestStringEscapesWhatIsDrawnAsNothing(t *testing.T) {
	l := Line{Label: "unread", Sender: "KEY\u202e\u00ad", MsgID: "id\u200b\x1b[31m\u0085\U000e0041\u115f"}
	s := l.String()
	for _, r := range s {
		if unicode.In(r, unicode.Cf, unicode.Cc) || r == '\u115f' || r == '\u00ad' {
			t.Errorf("line %q holds %U", s, r)
		}
	}
	got, err := Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	if got.Sender != l.Sender || got.MsgID != l.MsgID {
		t.Errorf("read back %+v, want %+v", got, l)
	}
}

func TestParseRefusesWhatIsNotAReceiptLine(t *testing.T) {
	for _, line := range []string{
		"",
		"2 messages",
		`Receipt: {"sender":"x","msg_id":"y"}`,
		`  [unread] Receipt: {"sender":"x","msg_id":"y"}`,
		`[unread] receipt: {"sender":"x","msg_id":"y"}`,
		`[unread]Receipt: {}`,
		`[unread`,
		"  body that mentions ] Receipt: but is not a receipt line",
	} {
		if _, err := Parse(line); !errors.Is(err, ErrNotReceipt) {
			t.Errorf("Parse(%q) = %v, want ErrNotReceipt", line, err)
		}
	}
}

func TestParseRefusesABrokenReceipt(t *testing.T) {
	for _, line := range []string{
		"[stored] Receipt: {not json",
		`[stored] Receipt: {"sender":"x"}`,
		`[stored] Receipt: {"sender":"x","msg_id":null}`,
		`[stored] Receipt: {"sender":"x","msg_id":7}`,
		`[stored] Receipt: {"sender":"x","msg_id":"y"} trailing`,
		`[stored] Receipt: ["x","y"]`,
	} {
		_, err := Parse(line)
		if err == nil || errors.Is(err, ErrNotReceipt) {
			t.Errorf("Parse(%q) = %v, want an error about the receipt", line, err)
			continue
		}
		_, js, _ := strings.Cut(line, "] Receipt: ")
		if !strings.Contains(err.Error(), strconv.Quote(js)) {
			t.Errorf("error %q does not quote the receipt", err)
		}
	}
}

func TestScan(t *testing.T) {
	text := strings.Join([]string{
		"2 messages",
		`[stored] Receipt: {"sender":"k1","msg_id":"m1"}` + "\r",
		"  body that mentions ] Receipt: but is not a receipt line",
		"<interlink>",
		`[read] Receipt: {"sender":"k2","msg_id":"m2"}`,
	}, "\n")
	got, err := Scan(text)
	if err != nil {
		t.Fatal(err)
	}
	want := []Line{{"stored", "k1", "m1"}, {"read", "k2", "m2"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Scan (-want +got):\n%s", diff)
	}
	if _, err := Scan("ok\n[stored] Receipt: {not json\n"); err == nil {
		t.Error("Scan passed over a broken receipt")
	}
}

// Whatever the label and the receipt, the line is one line, and it reads
// back as the receipt it was written from, with its label less what would
// end it. Parse never panics on any line.
func FuzzLine(f *testing.F) {
	f.Add("receiver_stored", "KEY", "abc")
	f.Add("superseded by x] Receipt: {}", "k\u202e", "m\u200b\U000e0041")
	f.Add("a\nb", `"]\`, "\x1b\u0085\u2028")
	f.Fuzz(func(t *testing.T, label, sender, msgID string) {
		_, _ = Parse(label)
		if !utf8.ValidString(sender) || !utf8.ValidString(msgID) {
			return // JSON has no spelling for invalid UTF-8
		}
		s := Line{Label: label, Sender: sender, MsgID: msgID}.String()
		if strings.ContainsAny(s, "\n\r\u2028\u2029") {
			t.Fatalf("line %q breaks", s)
		}
		got, err := Parse(s)
		if err != nil {
			t.Fatalf("Parse(%q): %v", s, err)
		}
		want := Line{Label: labelDropper.Replace(label), Sender: sender, MsgID: msgID}
		if got != want {
			t.Fatalf("Parse(%q) = %+v, want %+v", s, got, want)
		}
	})
}
