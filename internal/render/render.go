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
// could act on a terminal or reorder what a reader sees, and breaks every
// spelling of the block's own tags; [Body] also marks body lines that look
// like interlink's own notice, header or receipt lines. Attribute values
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

	"golang.org/x/text/unicode/norm"

	"github.com/interlink-go/interlink/internal/mailbox"
	"github.com/interlink-go/interlink/internal/policy"
	"github.com/interlink-go/interlink/internal/protocol"
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

// RecordFrom renders a mailbox record for a tool result: the label (the
// record's state, or "superseded by <id>"), the receipt as compact JSON,
// then the block under the stored petname holding the message's text from
// byte offset on, at most [MaxText] bytes of it. When the block does not
// reach the end of the text, or starts after its beginning, a note follows
// that gives the text's full size in bytes and the offset to read on from.
//
// An offset beyond the text shows an empty block and the note; one inside
// a character starts at that character. Cuts never split a character.
func RecordFrom(r *mailbox.Record, offset int) string {
	label := AttrValue(string(r.State))
	if r.SupersededBy != "" {
		label = "superseded by " + AttrValue(r.SupersededBy)
	}
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
	b.WriteString("[")
	b.WriteString(label)
	b.WriteString("] Receipt: ")
	b.WriteString(receiptJSON(r.Receipt()))
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

// receiptJSON returns the receipt as compact JSON in which every format
// character (bidirectional controls included) and every C1 control is
// written as a \u escape. encoding/json already escapes the C0 controls
// and, by default, <, > and &; the escapes keep the receipt exact for
// acknowledge_messages while nothing in it can act on a terminal or reorder
// or hide what the line shows.
func receiptJSON(rc mailbox.Receipt) string {
	raw, _ := json.Marshal(rc) // two strings: cannot fail
	s := string(raw)
	if strings.IndexFunc(s, mustEscape) < 0 {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		if !mustEscape(r) {
			b.WriteRune(r)
			continue
		}
		// Such a character only ever occurs inside a JSON string, where an
		// escape means the same character.
		if r > 0xFFFF {
			hi, lo := utf16Pair(r)
			fmt.Fprintf(&b, `\u%04x\u%04x`, hi, lo)
		} else {
			fmt.Fprintf(&b, `\u%04x`, r)
		}
	}
	return b.String()
}

// mustEscape reports whether receiptJSON escapes r.
func mustEscape(r rune) bool { return unicode.In(r, unicode.Cf, unicode.Cc) }

// utf16Pair returns the surrogate pair that encodes r, which is above
// U+FFFF.
func utf16Pair(r rune) (rune, rune) {
	r -= 0x10000
	return 0xD800 + (r>>10)&0x3FF, 0xDC00 + r&0x3FF
}

// Inert returns s made inert for a model's context and any terminal that
// shows it:
//
//  1. invalid UTF-8 becomes U+FFFD;
//  2. ESC and every other control character (Unicode Cc: C0, DEL, C1)
//     except line feed and tab are removed, so no terminal escape or
//     operating-system command survives, and a carriage return cannot
//     overwrite a line;
//  3. bidirectional controls (embeddings, overrides, isolates and marks)
//     are removed, so text reads in the order of its bytes;
//  4. the separators U+2028 and U+2029 become line feeds, so every line
//     break is one [Body] sees;
//  5. every "<" that starts a spelling of the block's opening or closing
//     tag becomes the full-width "＜" (U+FF1C). The match ignores case
//     (including the Unicode letters that fold to ASCII ones, and
//     full-width letters), white space between "<", "/" and the name, and
//     invisible format characters anywhere in it: "</INTERLINK >",
//     "< /interlink", "<\tinterlink" and "<inter\u200blink" are all
//     broken.
//
// Inert is idempotent, and its result never contains a tag-opening "<"
// followed by such a spelling.
func Inert(s string) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	s = strings.Map(func(r rune) rune {
		switch {
		case r == '\n' || r == '\t':
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

// isTagAt reports whether s from byte i on, just after a "<", spells the
// rest of an opening or closing interlink tag: optional ignorable
// characters, an optional "/" and more ignorable characters, then the
// letters of "interlink" in any case, with format characters allowed
// between them.
func isTagAt(s string, i int) bool {
	i = skipIgnorable(s, i, true)
	if i < len(s) && s[i] == '/' {
		i = skipIgnorable(s, i+1, true)
	}
	for k := 0; k < len(tagName); k++ {
		if k > 0 {
			i = skipIgnorable(s, i, false)
		}
		if i >= len(s) {
			return false
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if !foldsTo(r, tagName[k]) {
			return false
		}
		i += size
	}
	return true
}

// skipIgnorable returns the index of the first character at or after i that
// is not a format character (nor white space, when space is set).
func skipIgnorable(s string, i int, space bool) int {
	for i < len(s) {
		r, size := utf8.DecodeRuneInString(s[i:])
		if !unicode.Is(unicode.Cf, r) && !(space && unicode.IsSpace(r)) {
			break
		}
		i += size
	}
	return i
}

// foldsTo reports whether r reads as the lower-case ASCII letter c: it is c
// in either case, folds to it (such as the Kelvin sign to k), or is a
// compatibility form of it (such as a full-width letter).
func foldsTo(r rune, c byte) bool {
	if r < utf8.RuneSelf {
		return r|0x20 == rune(c)
	}
	for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
		if f == rune(c) {
			return true
		}
	}
	n := norm.NFKC.String(string(r))
	return len(n) == 1 && n[0]|0x20 == c
}

// Body returns s as it may stand inside a block: [Inert], then every line
// that starts like one of interlink's own lines gets [PeerLineMarker] in
// front. Interlink's own lines are the block headers and notices (a line
// starting "[interlink" or "interlink"), its tags (a line starting with
// "<interlink", or the full-width form [Inert] leaves), and receipt lines
// ("[<anything>] Receipt:"). The comparison ignores case, leading white
// space and format characters, and compatibility forms such as full-width
// brackets. Body is idempotent.
func Body(s string) string {
	s = Inert(s)
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		if imitatesOwnLine(l) {
			lines[i] = PeerLineMarker + l
		}
	}
	return strings.Join(lines, "\n")
}

// lookahead bounds how much of a line imitatesOwnLine normalizes.
const lookahead = 256

// imitatesOwnLine reports whether line starts like one of interlink's own
// lines; see [Body].
func imitatesOwnLine(line string) bool {
	line = strings.TrimLeftFunc(line, func(r rune) bool { return unicode.IsSpace(r) || unicode.Is(unicode.Cf, r) })
	if line == "" {
		return false
	}
	head := line[:runeStart(line, lookahead)]
	head = strings.Map(func(r rune) rune {
		if unicode.Is(unicode.Cf, r) {
			return -1
		}
		return unicode.ToLower(r)
	}, norm.NFKC.String(head))
	switch {
	case strings.HasPrefix(head, tagName):
		return true
	case strings.HasPrefix(head, "<"):
		rest := strings.TrimLeftFunc(head[1:], unicode.IsSpace)
		rest = strings.TrimLeftFunc(strings.TrimPrefix(rest, "/"), unicode.IsSpace)
		return strings.HasPrefix(rest, tagName)
	case strings.HasPrefix(head, "["):
		rest := strings.TrimLeftFunc(head[1:], unicode.IsSpace)
		if strings.HasPrefix(rest, tagName) {
			return true
		}
		_, after, ok := strings.Cut(rest, "]")
		if !ok {
			return false
		}
		after = strings.TrimLeftFunc(after, unicode.IsSpace)
		if !strings.HasPrefix(after, "receipt") {
			return false
		}
		after = strings.TrimLeftFunc(after[len("receipt"):], unicode.IsSpace)
		return strings.HasPrefix(after, ":")
	}
	return false
}
