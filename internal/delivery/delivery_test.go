package delivery

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/interlink-go/interlink/internal/mailbox"
	"github.com/interlink-go/interlink/internal/protocol"
)

func TestRecordJSON(t *testing.T) {
	b, err := json.Marshal(Record{Sender: "a", MsgID: "m", Content: "c"})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := string(b), `{"sender":"a","msg_id":"m","content":"c"}`; got != want {
		t.Errorf("Marshal = %s, want %s", got, want)
	}
	b, _ = json.Marshal(Record{Sender: "a", MsgID: "m", Content: "c", TaskID: "t", Status: "update", InReplyTo: "x"})
	if got, want := string(b), `{"sender":"a","msg_id":"m","content":"c","task_id":"t","status":"update","in_reply_to":"x"}`; got != want {
		t.Errorf("Marshal = %s, want %s", got, want)
	}
}

func TestMemory(t *testing.T) {
	var m Memory
	ctx := context.Background()
	st, err := m.Notice(ctx, "n1", "text")
	if err != nil || st != mailbox.StateInboxQueued {
		t.Fatalf("Notice = %q, %v", st, err)
	}
	boom := errors.New("boom")
	m.SetFail(boom)
	if _, err := m.Notice(ctx, "n2", "x"); !errors.Is(err, boom) {
		t.Errorf("failing Notice err = %v", err)
	}
	if err := m.Text(ctx, Record{Sender: "s"}); !errors.Is(err, boom) {
		t.Errorf("failing Text err = %v", err)
	}
	m.SetFail(nil)
	if err := m.Text(ctx, Record{Sender: "s", MsgID: "k", Content: "knock"}); err != nil {
		t.Fatal(err)
	}
	got := m.Records()
	want := []Record{NoticeRecord("n1", "text"), {Sender: "s", MsgID: "k", Content: "knock"}}
	if len(got) != 2 || got[0] != want[0] || got[1] != want[1] {
		t.Errorf("Records = %+v, want %+v", got, want)
	}
	if got[0].Sender != protocol.SystemSender {
		t.Errorf("notice sender = %q", got[0].Sender)
	}
}
