package loadgen

import (
	"context"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/interlink-go/interlink/internal/loadgen/measure"
	"github.com/interlink-go/interlink/internal/loadgen/payload"
	"github.com/interlink-go/interlink/internal/loadgen/target"
	"github.com/interlink-go/interlink/internal/wire"
)

// bolt measures the raw bbolt floor of a durable bus: one writer that
// commits a put and then a delete, each its own fsynced transaction, which
// is what a sequential send→recv→ack costs a bbolt store at the least. An
// operation is the pair of commits.
//
// The file is path, which must not exist yet and is kept, or, with path
// empty, a new file in a temporary folder inside dir ("" for the system's
// temporary folder) that is removed afterwards. Measure on the file system
// the bus uses: fsync cost differs wildly between disks and tmpfs.
func (f *floors) bolt(ctx context.Context, path, dir string) (res measure.Result, err error) {
	res.Name = string(ModeBoltFloor)
	if path == "" {
		tmp, err := os.MkdirTemp(dir, "interlink-boltfloor-")
		if err != nil {
			return res, err
		}
		defer os.RemoveAll(tmp)
		path = filepath.Join(tmp, "floor.db")
	} else if err := target.MustNotExist(path); err != nil {
		return res, err
	}
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: time.Second})
	if err != nil {
		return res, err
	}
	defer func() { err = errors.Join(err, db.Close()) }()
	bucket := []byte("q")
	if err := db.Update(func(tx *bolt.Tx) error {
		_, err := tx.CreateBucketIfNotExists(bucket)
		return err
	}); err != nil {
		return res, err
	}

	// The value is as long as a stored envelope: the payload plus the
	// wrapping and stamp the bus adds.
	value := make([]byte, len(wire.Envelope(payload.Make("b", 0, f.cfg.Size), 1700000000000)))
	t := f.meter.tally(string(ModeBoltFloor))
	elapsed, err := f.meter.phase(ctx, 1, func(ctx context.Context, _ int) {
		var key [8]byte
		for seq := uint64(1); ctx.Err() == nil; seq++ {
			binary.BigEndian.PutUint64(key[:], seq)
			start := time.Now()
			err := db.Update(func(tx *bolt.Tx) error {
				return tx.Bucket(bucket).Put(key[:], value)
			})
			if err == nil {
				err = db.Update(func(tx *bolt.Tx) error {
					return tx.Bucket(bucket).Delete(key[:])
				})
			}
			switch {
			case err != nil:
				t.fail(ctx, err)
			case ctx.Err() == nil:
				t.ok(time.Since(start))
			}
		}
	})
	res = t.result(string(ModeBoltFloor), elapsed)
	res.Extra = []measure.Field{{Key: "commits_per_op", Value: "2"}}
	return res, err
}
