package bolt_test

import (
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/interlink-go/interlink/internal/store/bolt"
)

func ExampleOpen() {
	dir, err := os.MkdirTemp("", "store-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "bus.db")

	s, err := bolt.Open(path, nil)
	if err != nil {
		log.Fatal(err)
	}
	key, _, err := s.Enqueue("K#s1", []byte(`{"payload":null,"ts":1}`))
	if err != nil {
		log.Fatal(err)
	}
	s.Close()

	// The entry and its key survive a reopen.
	s, err = bolt.Open(path, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()
	e, ok, _ := s.Peek("K#s1")
	fmt.Println(ok, e.Key == key, string(e.Value))
	// Output:
	// true true {"payload":null,"ts":1}
}
