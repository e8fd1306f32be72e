package outbox_test

import (
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/interlink-go/interlink/internal/identity"
	"github.com/interlink-go/interlink/internal/outbox"
	"github.com/interlink-go/interlink/internal/statefile"
)

// What send_message pays for the outbox: one Enqueue, a locked rewrite of
// the file with fsync, with no message waiting and with 800 waiting (a
// relay down for a while) at the start. The Floor benchmarks replace a file of the same
// size atomically with fsync, which no durable outbox can avoid.
func BenchmarkEnqueue(b *testing.B) {
	for _, waiting := range []int{0, 800} {
		b.Run(fmt.Sprintf("waiting=%d", waiting), func(b *testing.B) {
			o, _ := prefilled(b, waiting+1) // the folder and lock file exist, as they do after the first message
			data, err := os.ReadFile(o.Path())
			if err != nil {
				b.Fatal(err)
			}
			if waiting == 0 {
				data = []byte(`{"messages":[]}`)
			}
			if err := os.WriteFile(o.Path(), data, 0o600); err != nil {
				b.Fatal(err)
			}
			// Each round adds one message, so the file grows by the
			// number of rounds (200 in the documented runs); the outbox
			// reads its own last write back without decoding it.
			for b.Loop() {
				b.StopTimer()
				m := newMessage(b, "a message of about one line of prose, as most are.", time.Now())
				b.StartTimer()
				if err := o.Enqueue(bg, routeTo("s1"), "bob", m); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkFloorWriteAtomic(b *testing.B) {
	for _, waiting := range []int{0, 800} {
		b.Run(fmt.Sprintf("waiting=%d", waiting), func(b *testing.B) {
			o, _ := prefilled(b, waiting+1)
			data, err := os.ReadFile(o.Path())
			if err != nil {
				b.Fatal(err)
			}
			for b.Loop() {
				if err := statefile.WriteAtomic(o.Path(), data); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// prefilled returns an outbox holding n waiting messages, n > 0, and the
// size of its file.
func prefilled(b *testing.B, n int) (*outbox.Outbox, int) {
	b.Helper()
	o := newOutbox(b, nil, nil)
	msgs := make([]identity.Message, n)
	for i := range msgs {
		msgs[i] = newMessage(b, "a message of about one line of prose, as most are.", time.Now())
	}
	if err := outbox.Prefill(o, routeTo("s1"), "bob", msgs); err != nil {
		b.Fatal(err)
	}
	fi, err := os.Stat(o.Path())
	if err != nil {
		b.Fatal(err)
	}
	return o, int(fi.Size())
}
