package store_test

import (
	"fmt"
	"log"
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
