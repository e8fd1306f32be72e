package statefile_test

import (
	"fmt"
	"log"
	"os"
	"path/filepath"
	"strconv"

	"github.com/interlink-go/interlink/internal/statefile"
)

func ExampleUpdate() {
	dir, err := os.MkdirTemp("", "statefile")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "counter.json")

	for range 3 {
		err := statefile.Update(path, statefile.LockPath(path, "lock"), func(data []byte, exists bool) ([]byte, error) {
			n := 0
			if exists {
				var err error
				if n, err = strconv.Atoi(string(data)); err != nil {
					return nil, err
				}
			}
			return []byte(strconv.Itoa(n + 1)), nil
		})
		if err != nil {
			log.Fatal(err)
		}
	}

	data, _, err := statefile.Read(path)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(string(data))
	// Output: 3
}
