// Package receipt writes and reads the receipt line: the line that heads
// each received message in a tool result and names it exactly, so that the
// model can hand it back to acknowledge_messages or read_message.
//
//	[<label>] Receipt: {"sender":"<signer key>","msg_id":"<msg_id>"}
//
// The label is the message's delivery state, or "superseded by <msg_id>";
// the JSON object is the receipt, the signer's key and the msg_id. Scripts
// and host tests read these lines by the text "] Receipt: ", so the shape
// never changes.
//
// [Line.String] is the one writer and [Parse] the one parser. What a line
// can carry is bounded so that the two always agree: the label never holds
// "]" or a line break, so nothing in it can end the label early or start a
// line of its own, and the JSON escapes every character drawn as nothing
// (format characters, bidirectional controls and the other
// default-ignorable characters) and every control character, so the line
// shows everything it holds and no terminal or model reads more into it.
package receipt

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"unicode"

	"github.com/interlink-go/interlink/internal/lookalike"
)

// ErrNotReceipt is returned by [Parse] for a line that is not a receipt
// line: it does not start with "[" or has no "] Receipt: " after its
// label.
var ErrNotReceipt = errors.New("receipt: not a receipt line")

// marker separates the label from the receipt.
const marker = "] Receipt: "

// Line is one receipt line. Sender and MsgID are the receipt; encoded as
// JSON, a Line is the receipt acknowledge_messages takes.
type Line struct {
	// Label is the state shown in front of the receipt. [Line.String]
	// removes "]" and line breaks from it.
	Label  string `json:"-"`
	Sender string `json:"sender"`
	MsgID  string `json:"msg_id"`
}

// labelDropper removes from a label what would end it or the line.
var labelDropper = strings.NewReplacer("]", "", "\n", "", "\r", "", "\u2028", "", "\u2029", "")

// String returns the line, without a line break at its end. A Line whose
// Sender and MsgID are valid UTF-8 reads back with [Parse] as the same
// receipt, and with the label as written here.
func (l Line) String() string {
	var b strings.Builder
	b.WriteByte('[')
	b.WriteString(labelDropper.Replace(l.Label))
	b.WriteString(marker)
	writeJSON(&b, l)
	return b.String()
}

// writeJSON writes the receipt of l as compact JSON in which every format
// character, every other character drawn as nothing and every C1 control
// is a \u escape. encoding/json already escapes the C0 controls and, by
// default, <, > and &.
func writeJSON(b *strings.Builder, l Line) {
	raw, _ := json.Marshal(l) // two strings: cannot fail
	s := string(raw)
	if strings.IndexFunc(s, mustEscape) < 0 {
		b.WriteString(s)
		return
	}
	for _, r := range s {
		if !mustEscape(r) {
			b.WriteRune(r)
			continue
		}
		// Such a character only ever occurs inside a JSON string, where an
		// escape means the same character.
		if r > 0xFFFF {
			hi, lo := utf16Pair(r)
			fmt.Fprintf(b, `\u%04x\u%04x`, hi, lo)
		} else {
			fmt.Fprintf(b, `\u%04x`, r)
		}
	}
}

// mustEscape reports whether r is written as an escape: a format or control
// character, or any other character drawn as nothing
// ([lookalike.Ignorable]).
func mustEscape(r rune) bool { return unicode.In(r, unicode.Cf, unicode.Cc) || lookalike.Ignorable(r) }

// utf16Pair returns the surrogate pair that encodes r, which is above
// U+FFFF.
func utf16Pair(r rune) (rune, rune) {
	r -= 0x10000
	return 0xD800 + (r>>10)&0x3FF, 0xDC00 + r&0x3FF
}

// Parse reads one receipt line, as [Line.String] writes it; a line break at
// its end is ignored. A line that is not a receipt line is [ErrNotReceipt].
// One that is, but whose receipt is not a JSON object with the string
// fields sender and msg_id and nothing after it, is an error that quotes
// the receipt.
func Parse(line string) (Line, error) {
	line = strings.TrimRight(line, "\r\n")
	rest, ok := strings.CutPrefix(line, "[")
	if !ok {
		return Line{}, ErrNotReceipt
	}
	end := strings.IndexByte(rest, ']')
	if end < 0 || !strings.HasPrefix(rest[end:], marker) {
		return Line{}, ErrNotReceipt
	}
	js := rest[end+len(marker):]
	var f struct {
		Sender *string `json:"sender"`
		MsgID  *string `json:"msg_id"`
	}
	if err := json.Unmarshal([]byte(js), &f); err != nil {
		return Line{}, fmt.Errorf("receipt %q: %w", js, err)
	}
	if f.Sender == nil || f.MsgID == nil {
		return Line{}, fmt.Errorf("receipt %q: want the string fields sender and msg_id", js)
	}
	return Line{Label: rest[:end], Sender: *f.Sender, MsgID: *f.MsgID}, nil
}

// Scan returns the receipt lines of text, a tool result, in order. It
// fails on a receipt line whose receipt does not parse (see [Parse]).
func Scan(text string) ([]Line, error) {
	var out []Line
	for line := range strings.Lines(text) {
		l, err := Parse(line)
		if errors.Is(err, ErrNotReceipt) {
			continue
		}
		if err != nil {
			return nil, err
		}
		out = append(out, l)
	}
	return out, nil
}
