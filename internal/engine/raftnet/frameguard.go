package raftnet

import (
	"encoding/binary"
	"errors"
	"hash/crc32"
	"net"

	"github.com/slotmeta/slotmeta/internal/netguard"
)

// frameGuard reads a Raft connection as dragonboat frames it
// (internal/transport/tcp.go: a 2-byte magic number, an 18-byte request
// header — method, payload size, header CRC, payload CRC — then the
// payload) and fails the read on the first frame dragonboat would trust
// blindly: its loop allocates the payload size a header claims before it
// reads a byte of it, so one forged header (its CRC is public arithmetic)
// of 2^60 bytes panicked the node or ran it out of memory. A frame whose
// magic, header CRC, method and size check out proves the connection
// (netguard). Bytes pass through unchanged; only their meaning is followed.
type frameGuard struct {
	net.Conn
	state   int    // 0: magic, 1: header, 2: payload
	buf     []byte // the magic or header so far
	payload uint64 // payload bytes still to come
}

// Frame constants of the pinned dragonboat (TestDragonboatPin holds it).
const (
	frameHeaderSize = 18
	frameRaft       = 100
	frameSnapshot   = 200
	// maxFramePayload bounds a payload: dragonboat's own batches and
	// snapshot chunks stay far below (settings.MaxMessageBatchSize is 64
	// MiB).
	maxFramePayload = 64 << 20
)

var (
	frameMagic  = [2]byte{0xAE, 0x7D}
	framePoison = [2]byte{0x00, 0x00}
	errBadFrame = errors.New("raftnet: malformed Raft frame")
)

func newFrameGuard(c net.Conn) *frameGuard {
	return &frameGuard{Conn: c, buf: make([]byte, 0, frameHeaderSize)}
}

// NetConn is the connection underneath (netguard finds its own there).
func (f *frameGuard) NetConn() net.Conn { return f.Conn }

func (f *frameGuard) Read(p []byte) (int, error) {
	n, err := f.Conn.Read(p)
	if n > 0 {
		if ferr := f.follow(p[:n]); ferr != nil {
			return 0, &net.OpError{Op: "read", Net: "tcp", Err: ferr}
		}
	}
	return n, err
}

// follow advances the framing over b.
func (f *frameGuard) follow(b []byte) error {
	for len(b) > 0 {
		switch f.state {
		case 0, 1:
			want := 2
			if f.state == 1 {
				want = frameHeaderSize
			}
			k := min(want-len(f.buf), len(b))
			f.buf = append(f.buf, b[:k]...)
			b = b[k:]
			if len(f.buf) < want {
				return nil
			}
			if f.state == 0 {
				switch [2]byte(f.buf) {
				case frameMagic:
					f.state, f.buf = 1, f.buf[:0]
				case framePoison:
					f.buf = f.buf[:0] // the peer closes: dragonboat answers and returns
				default:
					return errBadFrame
				}
				continue
			}
			size, err := checkHeader(f.buf)
			if err != nil {
				return err
			}
			netguard.ProveConn(f.Conn) // a well-formed frame: a node speaking
			f.state, f.buf, f.payload = 2, f.buf[:0], size
		case 2:
			k := min(f.payload, uint64(len(b)))
			f.payload -= k
			b = b[k:]
			if f.payload == 0 {
				f.state = 0
			}
		}
	}
	return nil
}

// checkHeader validates a request header as dragonboat decodes it and
// returns its payload size.
func checkHeader(h []byte) (uint64, error) {
	method := binary.BigEndian.Uint16(h)
	size := binary.BigEndian.Uint64(h[2:])
	crc := binary.BigEndian.Uint32(h[10:])
	var zeroed [frameHeaderSize]byte
	copy(zeroed[:], h)
	binary.BigEndian.PutUint32(zeroed[10:], 0)
	switch {
	case crc32.ChecksumIEEE(zeroed[:]) != crc:
		return 0, errBadFrame
	case method != frameRaft && method != frameSnapshot:
		return 0, errBadFrame
	case size == 0 || size > maxFramePayload:
		return 0, errBadFrame
	}
	return size, nil
}
