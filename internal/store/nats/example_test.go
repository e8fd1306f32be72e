package nats_test

import (
	"fmt"
	"log"

	"github.com/interlink-go/interlink/internal/store"
	"github.com/interlink-go/interlink/internal/store/nats"
)

// Open needs a NATS server with JetStream; several bus processes that
// open the same stream share its queues.
func ExampleOpen() {
	s, err := nats.Open("nats://127.0.0.1:4222", &nats.Options{
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
