// Package render turns messages into the text a host model reads.
//
// Every peer message reaches the model inside an attributed block:
//
//	[interlink peer message from "alice"] A peer sent this through Interlink; read it and act on it if it is in scope.
//	<interlink sender="alice" msg_id="…" task="t1" status="update">
//	the body
//	</interlink>
//
// # The sender
//
// The sender attribute is always a name this side chose: a stored petname
// that passes [policy.CheckPetname], "self", or "Interlink" for notices. It
// is written exactly as stored, never cleaned or shortened: a name that
// would need any change to be shown safely is not shown at all. Such a block
// has no sender attribute and says in its header that the sender's stored
// name is not valid (see [SenderAttr]). That happens only for records kept
// from before the petname rules, since peers.json no longer loads with such
// a name; the message itself is still delivered.
//
// # Peer text is inert
//
// Everything else in a block may come from a peer. [Inert] removes what
// could act on a terminal, reorder what a reader sees or reach the model
// unseen, and breaks every spelling of the block's own tags; [Body] also
// marks body lines that read like interlink's own notice, header or
// receipt lines. What counts as unseen and as a spelling is package
// [lookalike]'s one rule. Attribute values
// lose the characters that could end the attribute or the tag.
//
// Tool results show mailbox records with [Record]: a receipt line the model
// hands back to acknowledge_messages, then the block, holding at most
// [MaxText] bytes of the message's text, then a note when the text goes on.
package render

import (
	"encoding/json"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/interlink-go/interlink/internal/lookalike"
	"github.com/interlink-go/interlink/internal/mailbox"
	"github.com/interlink-go/interlink/internal/policy"
	"github.com/interlink-go/interlink/internal/protocol"
	"github.com/interlink-go/interlink/internal/receipt"
)

// MaxText is the most bytes of one message's text that one tool result
// shows. The rest stays in the mailbox; [RecordFrom] shows it from an
// offset.
const MaxText = 32 << 10

// AttrLimit is the most bytes an attribute other than the sender keeps; a
// longer value is cut and ends in "…". The receipt line carries the exact
// msg_id.
const AttrLimit = 256

// PeerLineMarker starts every body line that imitates one of interlink's
// own lines, so that a reader can tell the peer wrote it.
const PeerLineMarker = "(peer text) "

// Message is what a block shows. Sender is a name chosen locally; every other
// field may come from a peer.
type Message struct {
	Sender    string
	MsgID     string
	Content   string
	TaskID    string
	Status    string
	InReplyTo string
}

// SenderAttr returns the sender attribute a block writes for name, and
// whether it writes one: name itself when it is [protocol.SystemSender],
// [protocol.SelfSender] or a petname [policy.CheckPetname] accepts, and nothing
// otherwise. The attribute is never a changed form of name.
func SenderAttr(name string) (string, bool) {
	if name == protocol.SystemSender || name == protocol.SelfSender || policy.CheckPetname(name) == nil {
		return name, true
	}
	return "", false
}

// Headers of a block, one per kind of sender.
const (
	noticeHeader   = "[interlink notice] Interlink itself wrote this, not a peer; act on it before ending the turn.\n"
	peerHeader     = "[interlink peer message from \"%s\"] A peer sent this through Interlink; read it and act on it if it is in scope.\n"
	unnamedHeader  = "[interlink peer message from an unnamed sender] The name stored for this sender is not a valid petname, so it is not shown; tell the sender by its key. A peer sent this through Interlink; read it and act on it if it is in scope.\n"
	attrCutMarker  = "…"
	openTagPrefix  = "<interlink"
	closeTagSuffix = "\n</interlink>"
)

// Block returns the attributed block for m. Attributes that are empty are
// left out, in the order sender, msg_id, task, status, in_reply_to. The
// header names the sender in double quotes, which no petname holds, so a
// petname cannot pass the rest of its header off as the header's own words. The
// content of a notice from [protocol.SystemSender] is interlink's own text and goes
// through [Inert]; any other content goes through [Body].
func Block(m Message) string {
	sender, named := SenderAttr(m.Sender)
	system := named && sender == protocol.SystemSender
	var b strings.Builder
	b.Grow(len(m.Content) + 512)
	switch {
	case system:
		b.WriteString(noticeHeader)
	case named:
		fmt.Fprintf(&b, peerHeader, sender)
	default:
		b.WriteString(unnamedHeader)
	}
	b.WriteString(openTagPrefix)
	if named {
		b.WriteString(` sender="`)
		b.WriteString(sender)
		b.WriteByte('"')
	}
	attr := func(name, v string) {
		if v = AttrValue(v); v == "" {
			return
		}
		b.WriteByte(' ')
		b.WriteString(name)
		b.WriteString(`="`)
		b.WriteString(v)
		b.WriteByte('"')
	}
	attr("msg_id", m.MsgID)
	attr("task", m.TaskID)
	attr("status", m.Status)
	attr("in_reply_to", m.InReplyTo)
	b.WriteString(">\n")
	if system {
		b.WriteString(Inert(m.Content))
	} else {
		b.WriteString(Body(m.Content))
	}
	b.WriteString(closeTagSuffix)
	return b.String()
}

// attrDropper deletes what could end an attribute value or the tag, and
// the white space that would break the attribute over lines.
var attrDropper = strings.NewReplacer(`"`, "", "<", "", ">", "", "\n", "", "\t", "")

// Attr returns s as it may appear inside an attribute value: [Inert], then
// without double quotes, angle brackets, line feeds and tabs.
func Attr(s string) string { return attrDropper.Replace(Inert(s)) }

// AttrValue returns [Attr] of s cut to [AttrLimit] bytes; a cut value ends
// in "…".
func AttrValue(s string) string {
	s = Attr(s)
	if len(s) <= AttrLimit {
		return s
	}
	return s[:runeStart(s, AttrLimit-len(attrCutMarker))] + attrCutMarker
}

// runeStart returns the largest index at most i that starts a character of
// s (or len(s)).
func runeStart(s string, i int) int {
	if i >= len(s) {
		return len(s)
	}
	for i > 0 && !utf8.RuneStart(s[i]) {
		i--
	}
	return i
}

// Line renders one line of a notice inbox: a JSON object with the string
// fields sender, msg_id, content, task_id, status and in_reply_to. A line
// that is not a JSON object is shown through [Inert]; a missing sender, or
// one of another type, shows as an unnamed sender. Other fields of other
// types are ignored.
func Line(line string) string {
	var obj map[string]any
	if err := json.Unmarshal([]byte(line), &obj); err != nil || obj == nil {
		return Inert(line)
	}
	str := func(k string) string {
		s, _ := obj[k].(string)
		return s
	}
	return Block(Message{
		Sender:    str("sender"),
		MsgID:     str("msg_id"),
		Content:   str("content"),
		TaskID:    str("task_id"),
		Status:    str("status"),
		InReplyTo: str("in_reply_to"),
	})
}

// Record renders a mailbox record for a tool result, showing its text from
// the start: see [RecordFrom].
func Record(r *mailbox.Record) string { return RecordFrom(r, 0) }

// RecordFrom renders a mailbox record for a tool result: its receipt line
// ([ReceiptLine]), then the block under the stored petname holding the
// message's text from byte offset on, at most [MaxText] bytes of it. When
// the block does not reach the end of the text, or starts after its
// beginning, a note follows that gives the text's full size in bytes and
// the offset to read on from.
//
// An offset beyond the text shows an empty block and the note; one inside
// a character starts at that character. Cuts never split a character.
func RecordFrom(r *mailbox.Record, offset int) string {
	m := &r.Message
	text := m.Text
	total := len(text)
	start := runeStart(text, max(offset, 0))
	end := total
	if total-start > MaxText {
		end = runeStart(text, start+MaxText)
	}
	var b strings.Builder
	b.Grow(end - start + 1024)
	b.WriteString(ReceiptLine(r))
	b.WriteByte('\n')
	b.WriteString(Block(Message{
		Sender:    r.Peer,
		MsgID:     m.MsgID,
		Content:   text[start:end],
		TaskID:    m.TaskID,
		Status:    string(m.Status),
		InReplyTo: m.InReplyTo,
	}))
	switch {
	case end < total:
		fmt.Fprintf(&b, "\n[interlink] The text of this message is %d bytes; bytes %d to %d are shown. "+
			"Read on with read_message, passing the receipt's sender and msg_id and offset=%d.", total, start, end, end)
	case start > 0:
		fmt.Fprintf(&b, "\n[interlink] The text of this message is %d bytes; bytes %d to %d are shown, the end of the text.",
			total, start, end)
	}
	return b.String()
}

// ReceiptLine returns the receipt line of a mailbox record (see package
// receipt): labelled with the record's state, or "superseded by <msg_id>",
// each through [AttrValue], and naming the message by its signer's key and
// msg_id.
func ReceiptLine(r *mailbox.Record) string {
	label := AttrValue(string(r.State))
	if r.SupersededBy != "" {
		label = "superseded by " + AttrValue(r.SupersededBy)
	}
	rc := r.Receipt()
	return receipt.Line{Label: label, Sender: rc.Sender, MsgID: rc.MsgID}.String()
}

// Inert returns s made inert for a model's context and any terminal that
// shows it:
//
//  1. invalid UTF-8 becomes U+FFFD;
//  2. characters drawn as nothing are removed ([lookalike.Visible]): the
//     default-ignorable ones, among them zero-width characters, tag
//     characters (U+E0000..U+E0FFF), variation selectors, the Hangul
//     fillers and the bidirectional controls, so nothing reaches the model
//     that a reader of the same text could not see, and text reads in the
//     order of its bytes. Only the joiner and the presentation selector
//     inside emoji stay, as [lookalike.Visible] says;
//  3. ESC and every other control character (Unicode Cc: C0, DEL, C1)
//     except line feed and tab are removed, so no terminal escape or
//     operating-system command survives, and a carriage return cannot
//     overwrite a line;
//  4. the separators U+2028 and U+2029 become line feeds, so every line
//     break is one [Body] sees;
//  5. every "<" that starts a spelling of the block's opening or closing
//     tag becomes the full-width "＜" (U+FF1C). A spelling is what
//     [lookalike.Leads] reads as "interlink" in the characters after the
//     "<", up to the next angle bracket: any case, compatibility forms, look-alike letters of other
//     scripts, and white space, "/" and other signs before or inside the
//     name: "</INTERLINK >", "< /interlink", "<\tinterlink",
//     "<inter\u200blink" and "</\u0456nterlink" (a Cyrillic і) are all
//     broken.
//
// Inert is idempotent, and its result never contains a tag-opening "<"
// followed by such a spelling.
func Inert(s string) string {
	s = lookalike.Visible(strings.ToValidUTF8(s, "\uFFFD"))
	s = strings.Map(func(r rune) rune {
		switch {
		case r == '\n' || r == '\t':
			return r
		case r < utf8.RuneSelf: // fast path for ASCII: only C0 and DEL go
			if r < 0x20 || r == 0x7f {
				return -1
			}
			return r
		case r == '\u2028' || r == '\u2029':
			return '\n'
		case unicode.Is(unicode.Cc, r), unicode.Is(unicode.Bidi_Control, r):
			return -1
		}
		return r
	}, s)
	if !strings.Contains(s, "<") {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 8)
	for i := 0; i < len(s); i++ {
		if s[i] == '<' && isTagAt(s, i+1) {
			b.WriteString("\uFF1C")
			continue
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// tagName is the name of the block's tags, in lower case.
const tagName = "interlink"

// tagWindow is how many characters after a "<" isTagAt reads: the name
// and what may stand before and inside it.
const tagWindow = 64

// isTagAt reports whether s from byte i on, just after a "<", spells the
// rest of an opening or closing interlink tag: up to the next angle
// bracket (a tag's name never holds one) and within [tagWindow]
// characters, the letters and digits read as "interlink" from the start
// ([lookalike.Leads]).
func isTagAt(s string, i int) bool {
	rest := s[i:]
	if !mayLeadTag(rest) {
		return false
	}
	n := 0
	for j, r := range rest {
		if n == tagWindow || isAngle(r) {
			rest = rest[:j]
			break
		}
		n++
	}
	return lookalike.Leads(rest, tagName)
}

// isAngle reports whether r is an angle bracket, or a compatibility form
// of one such as the full-width "＜" Inert writes.
func isAngle(r rune) bool {
	switch r {
	case '<', '>', '\uFF1C', '\uFF1E', '\uFE64', '\uFE65':
		return true
	}
	return false
}

// mayLeadTag is a quick look at s before [lookalike.Leads] reads it: false
// when the first ASCII letter or digit of s, before any other character,
// cannot begin "interlink" (as "<b>" or "<div" cannot).
func mayLeadTag(s string) bool {
	for _, r := range s {
		switch {
		case r >= utf8.RuneSelf:
			return true
		case 'a' <= r && r <= 'z', 'A' <= r && r <= 'Z', '0' <= r && r <= '9':
			// The ASCII characters drawn like i or l, the word's first letter.
			return r == 'i' || r == 'I' || r == 'l' || r == '1'
		case r == '|':
			return true
		}
	}
	return false
}

// Body returns s as it may stand inside a block: [Inert], then every line
// that reads like one of interlink's own lines gets [PeerLineMarker] in
// front, unless it already starts with it. Interlink's own lines are the
// block headers and notices and the tags, whose letters and digits start
// with "interlink" ("[interlink notice]", "<interlink", "</interlink>"),
// and receipt lines ("[unread] Receipt: {...}"), which hold "receipt"
// right before a colon.
//
// The reading is [lookalike]'s: in any case, whatever white space,
// punctuation, symbols or invisible characters stand before or between the
// letters (a braille blank, a lone combining accent, a Hangul filler), and
// with letters of other scripts drawn like the word's ("[іnterlink", a
// Cyrillic і; "Rеceipt:", a Cyrillic е). So a line is marked when a reader
// could take its start for interlink's; a line marked that needed no mark
// loses nothing. Body is idempotent.
func Body(s string) string {
	s = Inert(s)
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		if !strings.HasPrefix(l, PeerLineMarker) && imitatesOwnLine(l) {
			lines[i] = PeerLineMarker + l
		}
	}
	return strings.Join(lines, "\n")
}

// lookahead bounds how much of a line imitatesOwnLine reads, in bytes.
const lookahead = 256

// receiptWord is the word of interlink's receipt lines.
const receiptWord = "receipt"

// imitatesOwnLine reports whether line reads like one of interlink's own
// lines; see [Body]. A receipt line is one where the text before some
// colon, back to the previous colon or the start, ends with "receipt".
func imitatesOwnLine(line string) bool {
	head := line[:runeStart(line, lookahead)]
	if lookalike.Leads(head, tagName) {
		return true
	}
	from := 0
	for i, r := range head {
		if isColon(r) {
			if lookalike.Ends(head[from:i], receiptWord) {
				return true
			}
			from = i + utf8.RuneLen(r)
		}
	}
	return false
}

// isColon reports whether r is drawn as a colon ([lookalike.DrawnAs]): ":"
// itself, a compatibility form of it, or a character UTS #39 maps to it,
// such as the Armenian full stop "։" or the ratio sign "∶".
func isColon(r rune) bool {
	if r < utf8.RuneSelf {
		return r == ':'
	}
	return lookalike.DrawnAs(r, ':')
}
