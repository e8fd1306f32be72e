package bolt

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"io/fs"
	"log/slog"
	"os"
)

// inspect looks at the file at path before bbolt opens it, under the lock
// bbolt takes, so that no other bus writes it meanwhile: it warns about an
// empty file and checks the rest. A missing file is left for bbolt to
// create, and inspect returns nil for it. Otherwise it returns the file,
// open for reading and unlocked, so that [Open] can tighten its mode
// once bbolt has opened it; a file it refuses is not changed in any way.
func inspect(path string, log *slog.Logger) (*os.File, error) {
	fi, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("store: open %s: %w", path, err)
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("store: open %s: not a regular file", path)
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("store: open %s: %w", path, err)
	}
	if err := check(f, path, log); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// check takes bbolt's lock on f, the file at path, warns when it is empty
// and otherwise checks it page by page (see [checkFile]), then releases
// the lock.
func check(f *os.File, path string, log *slog.Logger) error {
	unlock, ok, err := lockFile(f, lockTimeout)
	if err != nil {
		return fmt.Errorf("store: lock %s: %w", path, err)
	}
	if !ok {
		return fmt.Errorf("%w: %s (waited %v)", ErrLocked, path, lockTimeout)
	}
	defer unlock()
	fi, err := f.Stat()
	if err != nil {
		return fmt.Errorf("store: open %s: %w", path, err)
	}
	if fi.Size() == 0 {
		log.Warn("database file is empty; starting a new database in it", "db", path)
		return nil
	}
	if !lockChecks {
		return nil
	}
	err = checkFile(f, fi.Size())
	if ce, ok := errors.AsType[*CorruptError](err); ok {
		ce.Path = path
		return ce
	}
	if err != nil {
		return fmt.Errorf("store: check %s: %w", path, err)
	}
	return nil
}

// tightenOpened tightens the mode of f (see tightenMode) when it is still
// the file at path, the one bbolt opened.
func tightenOpened(f *os.File, path string, log *slog.Logger) {
	fi, err := f.Stat()
	if err != nil {
		return
	}
	if now, err := os.Stat(path); err != nil || !os.SameFile(fi, now) {
		return
	}
	tightenMode(f, path, fi, log)
}

// The checker reads bbolt's file format (version 2) with plain reads, so
// that a damaged file is found and described before bbolt maps it into
// memory. bbolt trusts its pages: a zeroed page, a garbled element or a
// file cut short makes it panic, fault on memory past the end of the file,
// or allocate without bound, in places no caller can recover from. The
// checker accepts only files whose every reachable page bbolt can read
// without that happening, and it never touches memory bbolt has mapped.
//
// bbolt's own checks do not suffice here, and this comment says why, so
// that the checker is dropped once they do. [bbolt.Tx.Check] walks the
// pages of a database that is open already, through the memory map: on
// a damaged file it meets the very panics and faults the checker is there
// to prevent, and it does not look at the meta pages bbolt reads first.
// The page reader of the `bbolt check` command reads with plain reads, as
// this checker does, but it lives in an internal package of bbolt that no
// other module can import. What the checker adds beyond Tx.Check is
// therefore: reading without the map; both meta pages, their checksums
// and the page size; every page header, element offset and overflow
// against the file's size; the freelist's length; and a bound on tree
// depth. Like Tx.Check, it also checks key order and that no page is
// reachable twice.
//
// Layout, as bbolt writes it (integers in the machine's byte order):
//
//	page header  id u64, flags u16, count u16, overflow u32   (16 bytes)
//	meta         magic u32, version u32, page size u32, flags u32,
//	             root bucket (root u64, sequence u64), freelist u64,
//	             high water mark u64, txid u64, checksum u64
//	branch elem  pos u32, key size u32, child page u64        (16 bytes)
//	leaf elem    flags u32, pos u32, key size u32, value size u32
//	freelist     count page ids u64 (if count is 0xFFFF, the first u64
//	             holds the real count)
//
// An element's pos counts from the element itself. A bucket is a leaf value
// flagged 1: its root page and sequence, and when the root is 0 the bucket's
// one leaf page inline after them.
const (
	boltMagic       = 0xED0CDAED
	boltVersion     = 2
	pageHeaderSize  = 16
	elemSize        = 16
	metaSize        = 64
	flagBranch      = 0x01
	flagLeaf        = 0x02
	flagFreelist    = 0x10
	bucketFlag      = 0x01
	bucketHeader    = 16
	noFreelist      = ^uint64(0)
	maxCheckedDepth = 256
	// readWhole is the largest page span read in one piece; larger ones
	// (a garbled overflow count, or a huge value) are read field by field.
	readWhole = 4 << 20
)

// errEmptyFile reports a database file of zero bytes, which bbolt turns
// into a new database.
var errEmptyFile = errors.New("the file is empty")

var order = binary.NativeEndian

// checkFile checks the bbolt file f, of size bytes. It returns nil for a
// file bbolt can open safely, errEmptyFile for an empty one, a
// *CorruptError (without its path) for a damaged one, and other errors for
// failed reads.
func checkFile(f *os.File, size int64) error {
	if size == 0 {
		return errEmptyFile
	}
	c := &fileCheck{f: f, size: size}
	return c.run()
}

// fileCheck is the state of one check.
type fileCheck struct {
	f        *os.File
	size     int64
	pageSize int64
	hwm      uint64 // pages below it are in use or free
	inUse    bitset // pages reached from a meta page
	free     bitset // pages on the freelist
	// bufs holds one page buffer per depth of the tree walk: a page's
	// buffer stays valid while the pages below it are read, and its next
	// sibling reuses it.
	bufs [][]byte
}

// buffer returns the buffer of depth, n bytes long, keeping its first
// keep bytes when it has to grow.
func (c *fileCheck) buffer(depth int, n, keep int64) []byte {
	for len(c.bufs) <= depth {
		c.bufs = append(c.bufs, nil)
	}
	if b := c.bufs[depth]; int64(cap(b)) < n {
		nb := make([]byte, n)
		copy(nb, b[:min(keep, int64(len(b)))])
		c.bufs[depth] = nb
	}
	c.bufs[depth] = c.bufs[depth][:n]
	return c.bufs[depth]
}

// damaged returns a CorruptError with a formatted detail.
func damaged(format string, args ...any) error {
	return &CorruptError{Detail: fmt.Sprintf(format, args...)}
}

// meta is the part of a meta page the checker uses.
type meta struct {
	pageSize uint32
	root     uint64
	freelist uint64
	hwm      uint64
	txid     uint64
	valid    bool
}

// parseMeta reads the meta in page, which starts with its page header.
func parseMeta(page []byte) meta {
	if len(page) < pageHeaderSize+metaSize {
		return meta{}
	}
	b := page[pageHeaderSize : pageHeaderSize+metaSize]
	m := meta{
		pageSize: order.Uint32(b[8:]),
		root:     order.Uint64(b[16:]),
		freelist: order.Uint64(b[32:]),
		hwm:      order.Uint64(b[40:]),
		txid:     order.Uint64(b[48:]),
	}
	h := fnv.New64a()
	h.Write(b[:56])
	m.valid = order.Uint32(b[0:]) == boltMagic && order.Uint32(b[4:]) == boltVersion &&
		order.Uint64(b[56:]) == h.Sum64()
	return m
}

// readAt reads len(b) bytes at off; a short read is an error.
func (c *fileCheck) readAt(b []byte, off int64) error {
	n, err := c.f.ReadAt(b, off)
	if n == len(b) {
		return nil
	}
	if err == nil || err == io.EOF {
		err = io.ErrUnexpectedEOF
	}
	return err
}

// findPageSize finds the page size as bbolt does: from the first meta page
// if it is valid, otherwise from a valid second meta page at one of the
// page sizes bbolt supports.
func (c *fileCheck) findPageSize() (int64, bool) {
	buf := make([]byte, 4096)
	if c.readAt(buf, 0) == nil {
		if m := parseMeta(buf); m.valid {
			return int64(m.pageSize), true
		}
	}
	for i := range 15 {
		pos := int64(1024) << i
		if pos >= c.size-1024 {
			break
		}
		n, err := c.f.ReadAt(buf, pos)
		if (err == nil && n == len(buf)) || (err == io.EOF && int64(n) == c.size-pos) {
			if m := parseMeta(buf[:n]); m.valid {
				return int64(m.pageSize), true
			}
		}
	}
	return 0, false
}

func (c *fileCheck) run() error {
	ps, ok := c.findPageSize()
	if !ok {
		return damaged("no valid bbolt header: it is not a database file, or its first pages are damaged")
	}
	if ps < 1024 || ps > 16<<20 {
		return damaged("its header gives an impossible page size of %d bytes", ps)
	}
	c.pageSize = ps
	if c.size < 2*ps {
		return damaged("it has %d bytes, less than the two header pages", c.size)
	}
	// Both meta pages, chosen between as bbolt does: the one with the
	// higher transaction id if it is valid, else the other.
	var metas [2]meta
	for i := range metas {
		buf := make([]byte, pageHeaderSize+metaSize)
		if err := c.readAt(buf, int64(i)*ps); err != nil {
			return fmt.Errorf("reading header page %d: %w", i, err)
		}
		metas[i] = parseMeta(buf)
	}
	a, b := metas[0], metas[1]
	if b.txid > a.txid {
		a, b = b, a
	}
	m := a
	if !m.valid {
		m = b
	}
	if !m.valid {
		return damaged("both header pages are damaged")
	}
	if m.hwm < 2 || m.hwm > uint64(c.size/ps) {
		if m.hwm > uint64(c.size/ps) {
			return damaged("it is cut short: its header counts %d pages of %d bytes, %d bytes, but the file has %d",
				m.hwm, ps, m.hwm*uint64(ps), c.size)
		}
		return damaged("its header counts %d pages", m.hwm)
	}
	c.hwm = m.hwm
	c.inUse = newBitset(m.hwm)
	c.free = newBitset(m.hwm)
	c.inUse.set(0)
	c.inUse.set(1)
	if m.freelist != noFreelist {
		if err := c.freelist(m.freelist); err != nil {
			return err
		}
	}
	if err := c.bucketRoot(m.root, 0); err != nil {
		return err
	}
	// bbolt never loses a page: one that is neither in use nor free means
	// the freelist or the tree lost track of it.
	if m.freelist != noFreelist {
		for p := uint64(2); p < c.hwm; p++ {
			if !c.inUse.has(p) && !c.free.has(p) {
				return damaged("page %d is neither in use nor on the freelist", p)
			}
		}
	}
	return nil
}

// span is the bytes of one page and its overflow pages. Small spans are
// read whole; larger ones are read piece by piece as the checker asks.
type span struct {
	c    *fileCheck
	id   uint64
	off  int64 // in the file
	n    int64
	data []byte // the whole span, when it was small enough
}

// bytes returns n bytes at off within the span, or an error if they do not
// lie inside it.
func (s *span) bytes(off, n int64, what string) ([]byte, error) {
	if off < 0 || n < 0 || off+n > s.n {
		return nil, damaged("page %d: %s lies outside the page", s.id, what)
	}
	if s.data != nil {
		return s.data[off : off+n], nil
	}
	b := make([]byte, n)
	if err := s.c.readAt(b, s.off+off); err != nil {
		return nil, fmt.Errorf("reading page %d: %w", s.id, err)
	}
	return b, nil
}

// page reads the header of page id, checks that it names itself and fits
// below the high water mark, marks it and its overflow pages in use, and
// returns its flags, count and span, held in the buffer of depth.
func (c *fileCheck) page(id uint64, depth int) (flags uint16, count int, s *span, err error) {
	if id < 2 || id >= c.hwm {
		return 0, 0, nil, damaged("a reference to page %d, outside the %d pages the header counts", id, c.hwm)
	}
	// One read brings the header and the first page; pages with overflow
	// take a second one for the rest.
	off := int64(id) * c.pageSize
	first := c.buffer(depth, c.pageSize, 0)
	if err := c.readAt(first, off); err != nil {
		return 0, 0, nil, fmt.Errorf("reading page %d: %w", id, err)
	}
	hdr := first[:pageHeaderSize]
	if got := order.Uint64(hdr); got != id {
		return 0, 0, nil, damaged("page %d is damaged: its header names page %d", id, got)
	}
	flags, count = order.Uint16(hdr[8:]), int(order.Uint16(hdr[10:]))
	overflow := uint64(order.Uint32(hdr[12:]))
	if overflow >= c.hwm-id {
		return 0, 0, nil, damaged("page %d runs past the last page", id)
	}
	for p := id; p <= id+overflow; p++ {
		switch {
		case c.inUse.has(p):
			return 0, 0, nil, damaged("page %d is used twice", p)
		case c.free.has(p):
			return 0, 0, nil, damaged("page %d is in use and on the freelist", p)
		}
		c.inUse.set(p)
	}
	s = &span{c: c, id: id, off: off, n: int64(overflow+1) * c.pageSize}
	switch {
	case overflow == 0:
		s.data = first
	case s.n <= readWhole:
		s.data = c.buffer(depth, s.n, c.pageSize)
		if err := c.readAt(s.data[c.pageSize:], off+c.pageSize); err != nil {
			return 0, 0, nil, fmt.Errorf("reading page %d: %w", id, err)
		}
	}
	return flags, count, s, nil
}

// freelist checks the freelist page and records the free pages.
func (c *fileCheck) freelist(id uint64) error {
	flags, count, s, err := c.page(id, 0)
	if err != nil {
		return err
	}
	if flags != flagFreelist {
		return damaged("page %d should hold the freelist but is of type %#x", id, flags)
	}
	first := int64(pageHeaderSize)
	n := int64(count)
	if count == 0xFFFF {
		b, err := s.bytes(first, 8, "the freelist count")
		if err != nil {
			return err
		}
		first += 8
		if u := order.Uint64(b); u > uint64(s.n) {
			return damaged("page %d: the freelist count %d does not fit the page", id, u)
		} else {
			n = int64(u)
		}
	}
	ids, err := s.bytes(first, 8*n, "the freelist")
	if err != nil {
		return err
	}
	for i := range n {
		p := order.Uint64(ids[8*i:])
		switch {
		case p < 2 || p >= c.hwm:
			return damaged("the freelist names page %d, outside the %d pages the header counts", p, c.hwm)
		case c.free.has(p):
			return damaged("the freelist names page %d twice", p)
		case c.inUse.has(p):
			return damaged("page %d is in use and on the freelist", p)
		}
		c.free.set(p)
	}
	return nil
}

// bucketRoot checks the tree of a bucket stored in its own pages.
func (c *fileCheck) bucketRoot(root uint64, depth int) error {
	_, _, err := c.tree(root, nil, nil, depth)
	return err
}

// tree checks the page id and the pages below it. Every key must be at
// least lo and below hi (nil: unbounded), as in bbolt's own consistency
// check. It returns the smallest and the largest key of the subtree.
func (c *fileCheck) tree(id uint64, lo, hi []byte, depth int) (first, last []byte, err error) {
	if depth > maxCheckedDepth {
		return nil, nil, damaged("page %d lies %d levels deep", id, depth)
	}
	flags, count, s, err := c.page(id, depth)
	if err != nil {
		return nil, nil, err
	}
	switch flags {
	case flagBranch:
		return c.branch(s, count, lo, hi, depth)
	case flagLeaf:
		return c.leaf(s, count, lo, hi, depth)
	default:
		return nil, nil, damaged("page %d should be a branch or leaf page but is of type %#x", id, flags)
	}
}

// keyOrder checks key as element i of a page, following prev, within
// [lo, hi).
func keyOrder(id uint64, i int, key, prev, hi []byte) error {
	if prev != nil && (bytes.Compare(prev, key) > 0 || (i > 0 && bytes.Equal(prev, key))) {
		return damaged("page %d: key %d is out of order", id, i)
	}
	if hi != nil && bytes.Compare(key, hi) >= 0 {
		return damaged("page %d: key %d is beyond its parent's range", id, i)
	}
	return nil
}

// branch checks the elements of a branch page and the subtrees they name.
// Each element's key must be the first key of its subtree: bbolt finds a
// child's element in its parent by that key when it writes the child
// back, and a mismatch makes it add a second element for the child, so
// the old page is freed while still referenced.
func (c *fileCheck) branch(s *span, count int, lo, hi []byte, depth int) (first, last []byte, err error) {
	if count == 0 {
		return nil, nil, damaged("page %d is a branch page without elements", s.id)
	}
	elems, err := s.bytes(pageHeaderSize, int64(count)*elemSize, "the element list")
	if err != nil {
		return nil, nil, err
	}
	keys := make([][]byte, count)
	for i := range count {
		e := elems[i*elemSize:]
		pos, ksize := int64(order.Uint32(e)), int64(order.Uint32(e[4:]))
		if keys[i], err = s.bytes(pageHeaderSize+int64(i)*elemSize+pos, ksize, fmt.Sprintf("the key of element %d", i)); err != nil {
			return nil, nil, err
		}
	}
	prev := lo
	for i := range count {
		if err := keyOrder(s.id, i, keys[i], prev, hi); err != nil {
			return nil, nil, err
		}
		next := hi
		if i+1 < count {
			next = keys[i+1]
		}
		child := order.Uint64(elems[i*elemSize+8:])
		cfirst, clast, err := c.tree(child, keys[i], next, depth+1)
		if err != nil {
			return nil, nil, err
		}
		if !bytes.Equal(cfirst, keys[i]) {
			return nil, nil, damaged("page %d: element %d does not match the first key of page %d", s.id, i, child)
		}
		prev, last = clast, clast
	}
	return bytes.Clone(keys[0]), last, nil
}

// leaf checks the elements of a leaf page, and the buckets among them.
func (c *fileCheck) leaf(s *span, count int, lo, hi []byte, depth int) (first, last []byte, err error) {
	elems, err := s.bytes(pageHeaderSize, int64(count)*elemSize, "the element list")
	if err != nil {
		return nil, nil, err
	}
	prev := lo
	for i := range count {
		e := elems[i*elemSize:]
		flags, pos := order.Uint32(e), int64(order.Uint32(e[4:]))
		ksize, vsize := int64(order.Uint32(e[8:])), int64(order.Uint32(e[12:]))
		at := pageHeaderSize + int64(i)*elemSize + pos
		key, err := s.bytes(at, ksize, fmt.Sprintf("the key of element %d", i))
		if err != nil {
			return nil, nil, err
		}
		if err := keyOrder(s.id, i, key, prev, hi); err != nil {
			return nil, nil, err
		}
		if i == 0 {
			first = key
		}
		prev = key
		if flags&bucketFlag == 0 {
			// A plain value is left unread; it only has to lie inside.
			if at+ksize+vsize > s.n {
				return nil, nil, damaged("page %d: the value of element %d lies outside the page", s.id, i)
			}
			continue
		}
		if vsize < bucketHeader {
			return nil, nil, damaged("page %d: the bucket in element %d is cut short", s.id, i)
		}
		if vsize > readWhole {
			return nil, nil, damaged("page %d: the bucket in element %d is too large to be inline", s.id, i)
		}
		v, err := s.bytes(at+ksize, vsize, fmt.Sprintf("the value of element %d", i))
		if err != nil {
			return nil, nil, err
		}
		if root := order.Uint64(v); root != 0 {
			if err := c.bucketRoot(root, depth+1); err != nil {
				return nil, nil, err
			}
			continue
		}
		if err := c.inline(s.id, v[bucketHeader:], depth+1); err != nil {
			return nil, nil, err
		}
	}
	if count == 0 {
		return nil, nil, nil
	}
	// The keys live in a buffer the next sibling page reuses.
	return bytes.Clone(first), bytes.Clone(prev), nil
}

// inline checks the leaf page of an inline bucket, held in the value of an
// element of page parent.
func (c *fileCheck) inline(parent uint64, p []byte, depth int) error {
	if depth > maxCheckedDepth {
		return damaged("page %d: buckets nested %d levels deep", parent, depth)
	}
	if len(p) < pageHeaderSize {
		return damaged("page %d: an inline bucket is cut short", parent)
	}
	if flags := order.Uint16(p[8:]); flags != flagLeaf {
		return damaged("page %d: an inline bucket holds a page of type %#x", parent, flags)
	}
	s := &span{c: c, id: parent, n: int64(len(p)), data: p}
	_, _, err := c.leaf(s, int(order.Uint16(p[10:])), nil, nil, depth)
	return err
}

// bitset is a set of page ids below a bound fixed at creation.
type bitset []uint64

func newBitset(n uint64) bitset { return make(bitset, (n+63)/64) }
func (b bitset) set(i uint64)   { b[i/64] |= 1 << (i % 64) }
func (b bitset) has(i uint64) bool {
	return b[i/64]&(1<<(i%64)) != 0
}
