//go:build !unix

package main

import "errors"

// mkfifo fails: named pipes do not live in this system's file system.
func mkfifo(string) error { return errors.New("no named pipes in the file system here") }
