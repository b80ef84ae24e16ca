package raftnet

import (
	"encoding/binary"
	"errors"
	"hash/crc32"
	"io"
	"net"
	"testing"
)

// frame is a dragonboat frame: magic, header, payload.
func frame(method uint16, size uint64, payload []byte, breakCRC bool) []byte {
	h := make([]byte, frameHeaderSize)
	binary.BigEndian.PutUint16(h, method)
	binary.BigEndian.PutUint64(h[2:], size)
	binary.BigEndian.PutUint32(h[14:], crc32.ChecksumIEEE(payload))
	crc := crc32.ChecksumIEEE(h)
	if breakCRC {
		crc++
	}
	binary.BigEndian.PutUint32(h[10:], crc)
	return append(append(frameMagic[:], h...), payload...)
}

// TestFrameGuard: well-formed frames pass through unchanged, however the
// reads split them; a header dragonboat would trust blindly — a payload of
// 2^60 bytes, a bad CRC, an unknown method, no magic — fails the read with
// an error that is not a timeout.
func TestFrameGuard(t *testing.T) {
	ok := append(frame(frameRaft, 5, []byte("hello"), false), frame(frameSnapshot, 3, []byte("abc"), false)...)
	for _, split := range []int{1, 3, 7, len(ok)} {
		a, b := net.Pipe()
		go func() {
			for i := 0; i < len(ok); i += split {
				_, _ = a.Write(ok[i:min(i+split, len(ok))])
			}
			_ = a.Close()
		}()
		got, err := io.ReadAll(newFrameGuard(b))
		if err != nil || string(got) != string(ok) {
			t.Fatalf("split %d: %q %v", split, got, err)
		}
	}
	for name, bad := range map[string][]byte{
		"huge payload":   frame(frameRaft, 1<<60, nil, false),
		"bad header CRC": frame(frameRaft, 5, []byte("hello"), true),
		"unknown method": frame(7, 5, []byte("hello"), false),
		"no magic":       []byte("GET / HTTP/1.1\r\n\r\n"),
	} {
		a, b := net.Pipe()
		go func() { _, _ = a.Write(bad); _ = a.Close() }()
		_, err := io.ReadAll(newFrameGuard(b))
		var ne net.Error
		if !errors.Is(err, errBadFrame) || (errors.As(err, &ne) && ne.Timeout()) {
			t.Fatalf("%s: %v, want errBadFrame, not a timeout", name, err)
		}
	}
}
