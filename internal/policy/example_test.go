package policy_test

import (
	"errors"
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/interlink-go/interlink/internal/identity"
	"github.com/interlink-go/interlink/internal/policy"
)

func ExampleStore_Add() {
	dir, err := os.MkdirTemp("", "policy")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "peers.json")
	// The file must exist; {} is an empty policy.
	if err := os.WriteFile(path, []byte("{}"), 0o600); err != nil {
		log.Fatal(err)
	}
	s, err := policy.Open(path)
	if err != nil {
		log.Fatal(err)
	}

	key, err := identity.ParsePublicKey("11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo")
	if err != nil {
		log.Fatal(err)
	}
	if err := s.Add("my-desktop", key); err != nil {
		log.Fatal(err)
	}
	// A petname never moves to another key.
	other, err := identity.ParsePublicKey("O2onvM62pC1io6jQKm8Nc2UyFXcd4kOmOsBIoYtZ2ik")
	if err != nil {
		log.Fatal(err)
	}
	err = s.Add("my-desktop", other)
	fmt.Println("conflict:", errors.Is(err, policy.ErrConflict))

	p, err := s.Load()
	if err != nil {
		log.Fatal(err)
	}
	name, _ := p.Petname(key)
	fmt.Println("petname:", name)
	fmt.Print(string(p.Marshal()))
	// Output:
	// conflict: true
	// petname: my-desktop
	// {
	//   "my-desktop": {
	//     "key": "11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo"
	//   }
	// }
}

func ExampleStore_AddAccepted() {
	dir, err := os.MkdirTemp("", "policy")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "peers.json")
	if err := os.WriteFile(path, []byte(`{"laptop": {"key": "O2onvM62pC1io6jQKm8Nc2UyFXcd4kOmOsBIoYtZ2ik"}}`), 0o600); err != nil {
		log.Fatal(err)
	}
	s, err := policy.Open(path)
	if err != nil {
		log.Fatal(err)
	}
	key, err := identity.ParsePublicKey("11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo")
	if err != nil {
		log.Fatal(err)
	}
	// A stranger claiming an existing petname gets a name of its own.
	name, err := s.AddAccepted("laptop\n", key)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(name)
	// Output: laptop-2
}
