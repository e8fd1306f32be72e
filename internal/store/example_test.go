package store_test

import (
	"fmt"
	"log"
	"os"
	"path/filepath"
	"time"

	"github.com/interlink-go/interlink/internal/store"
)

func ExampleNewMemory() {
	start := time.Unix(0, 1)
	s := store.NewMemory(&store.Options{Cap: 2, Now: func() time.Time { return start }})
	defer s.Close()

	for _, v := range []string{"a", "b", "c"} {
		_, dropped, err := s.Enqueue("K#s1", []byte(v))
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println("dropped:", dropped)
	}
	e, _, _ := s.Peek("K#s1")
	fmt.Printf("head: %q %s\n", e.Key, e.Value)
	if err := s.Delete(e.Key); err != nil {
		log.Fatal(err)
	}
	n, _ := s.Depth("K#s1")
	fmt.Println("depth:", n)
	// Output:
	// dropped: 0
	// dropped: 0
	// dropped: 1
	// head: "K#s1\x0000000000000000000002" b
	// depth: 1
}

func ExampleOpenBolt() {
	dir, err := os.MkdirTemp("", "store-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "bus.db")

	s, err := store.OpenBolt(path, nil)
	if err != nil {
		log.Fatal(err)
	}
	key, _, err := s.Enqueue("K#s1", []byte(`{"payload":null,"ts":1}`))
	if err != nil {
		log.Fatal(err)
	}
	s.Close()

	// The entry and its key survive a reopen.
	s, err = store.OpenBolt(path, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()
	e, ok, _ := s.Peek("K#s1")
	fmt.Println(ok, e.Key == key, string(e.Value))
	// Output:
	// true true {"payload":null,"ts":1}
}

// OpenNATS needs a NATS server with JetStream; several bus processes that
// open the same stream share its queues.
func ExampleOpenNATS() {
	s, err := store.OpenNATS("nats://127.0.0.1:4222", &store.NATSOptions{
		Options:  store.Options{Cap: 1024},
		Stream:   "INTERLINK",
		Replicas: 3,
		MinValue: 64 << 10,
	})
	if err != nil {
		// errors.Is tells ErrUnreachable, ErrNoJetStream, ErrStreamConfig
		// and ErrPayloadLimit apart; each message says what to do.
		log.Fatal(err)
	}
	defer s.Close()
	key, dropped, err := s.Enqueue("K#s1", []byte(`{"payload":null,"ts":1}`))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(key != "", dropped)
}
