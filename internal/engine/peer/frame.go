package peer

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net/http"

	"github.com/slotmeta/slotmeta/internal/slotstore/meta"
)

// The frames of a peer stream (stream.go). Each is
//
//	u32 length of the rest | u8 kind | u64 id | payload
//
// and the payloads are
//
//	request:  u8 len | method | u16 len | path (with its query) | headers | body
//	response: u16 status | headers | body
//	ping, pong: empty
//	headers:  u16 count | (u16 len | name | u16 len | value)*
//
// A request's id is the client's; its response carries the same id. A
// request frame is at most maxRequestFrame bytes (one Raft entry's worth of
// body and its headers), an answer at most maxAnswerFrame (a batch of
// forwarded commands is answered with each command's result, as over HTTP:
// four entries' worth). Decoding reads a frame from another process: it
// returns an error for anything malformed and never allocates past the
// frame's own length, itself bounded before it is read. Header names are
// canonical after decoding, as net/http makes them.

type frameKind uint8

const (
	frameRequest  frameKind = 1
	frameResponse frameKind = 2
	framePing     frameKind = 3
	framePong     frameKind = 4
)

const (
	frameHeaderLen  = 4 + 1 + 8
	maxRequestFrame = meta.MaxEntryBytes + 64<<10
	maxAnswerFrame  = 4*meta.MaxEntryBytes + 64<<10
	maxFrameHeader  = 64 // header fields in one frame
)

var errFrame = errors.New("peer stream: malformed frame")

// frame is one decoded frame.
type frame struct {
	kind   frameKind
	id     uint64
	method string      // request
	path   string      // request
	status int         // response
	header http.Header // request, response
	body   []byte      // request, response
}

// appendFrame appends f's encoding to b.
func appendFrame(b []byte, f *frame) ([]byte, error) {
	start := len(b)
	b = append(b, 0, 0, 0, 0, byte(f.kind))
	b = binary.BigEndian.AppendUint64(b, f.id)
	switch f.kind {
	case frameRequest:
		if len(f.method) > 255 || len(f.path) > 65535 {
			return b[:start], fmt.Errorf("%w: method or path too long", errFrame)
		}
		b = append(b, byte(len(f.method)))
		b = append(b, f.method...)
		b = binary.BigEndian.AppendUint16(b, uint16(len(f.path)))
		b = append(b, f.path...)
	case frameResponse:
		if f.status < 100 || f.status > 999 {
			return b[:start], fmt.Errorf("%w: status %d", errFrame, f.status)
		}
		b = binary.BigEndian.AppendUint16(b, uint16(f.status))
	}
	if f.kind == frameRequest || f.kind == frameResponse {
		var err error
		if b, err = appendHeader(b, f.header); err != nil {
			return b[:start], err
		}
		b = append(b, f.body...)
	}
	n, bound := len(b)-start-4, maxRequestFrame
	if f.kind == frameResponse {
		bound = maxAnswerFrame
	}
	if n > bound {
		return b[:start], fmt.Errorf("%w: %d bytes over the %d-byte bound", errFrame, n, bound)
	}
	binary.BigEndian.PutUint32(b[start:], uint32(n))
	return b, nil
}

func appendHeader(b []byte, h http.Header) ([]byte, error) {
	count := 0
	for _, vs := range h {
		count += len(vs)
	}
	if count > maxFrameHeader {
		return b, fmt.Errorf("%w: %d header fields", errFrame, count)
	}
	b = binary.BigEndian.AppendUint16(b, uint16(count))
	for k, vs := range h {
		for _, v := range vs {
			if len(k) > 65535 || len(v) > 65535 {
				return b, fmt.Errorf("%w: header field too long", errFrame)
			}
			b = binary.BigEndian.AppendUint16(b, uint16(len(k)))
			b = append(b, k...)
			b = binary.BigEndian.AppendUint16(b, uint16(len(v)))
			b = append(b, v...)
		}
	}
	return b, nil
}

// readFrame reads one frame of at most max bytes from r.
func readFrame(r *bufio.Reader, max int) (*frame, error) {
	var lenb [4]byte
	if _, err := io.ReadFull(r, lenb[:]); err != nil {
		return nil, err
	}
	n := binary.BigEndian.Uint32(lenb[:])
	if n < frameHeaderLen-4 || int64(n) > int64(max) {
		return nil, fmt.Errorf("%w: length %d", errFrame, n)
	}
	b := make([]byte, n)
	if _, err := io.ReadFull(r, b); err != nil {
		return nil, err
	}
	return decodeFrame(b)
}

// decodeFrame decodes a frame's bytes after its length.
func decodeFrame(b []byte) (*frame, error) {
	if len(b) < frameHeaderLen-4 {
		return nil, errFrame
	}
	f := &frame{kind: frameKind(b[0]), id: binary.BigEndian.Uint64(b[1:9])}
	d := frameDecoder{b: b[9:]}
	switch f.kind {
	case framePing, framePong:
		if len(d.b) != 0 {
			return nil, errFrame
		}
		return f, nil
	case frameRequest:
		f.method = string(d.bytes(int(d.u8())))
		f.path = string(d.bytes(int(d.u16())))
		if d.err == nil && (f.method == "" || f.path == "" || f.path[0] != '/') {
			return nil, errFrame
		}
	case frameResponse:
		f.status = int(d.u16())
		if d.err == nil && (f.status < 100 || f.status > 999) {
			return nil, errFrame
		}
	default:
		return nil, fmt.Errorf("%w: kind %d", errFrame, f.kind)
	}
	count := int(d.u16())
	if count > maxFrameHeader {
		return nil, errFrame
	}
	if count > 0 {
		f.header = make(http.Header, count)
	}
	for i := 0; i < count && d.err == nil; i++ {
		k := http.CanonicalHeaderKey(string(d.bytes(int(d.u16()))))
		v := string(d.bytes(int(d.u16())))
		if d.err == nil {
			f.header[k] = append(f.header[k], v)
		}
	}
	if d.err != nil {
		return nil, d.err
	}
	f.body = d.b
	return f, nil
}

// frameDecoder reads fields off a frame's payload; the first shortfall
// sticks as err.
type frameDecoder struct {
	b   []byte
	err error
}

func (d *frameDecoder) bytes(n int) []byte {
	if d.err != nil || n > len(d.b) {
		d.err = errFrame
		return nil
	}
	out := d.b[:n]
	d.b = d.b[n:]
	return out
}

func (d *frameDecoder) u8() uint8 {
	if b := d.bytes(1); b != nil {
		return b[0]
	}
	return 0
}

func (d *frameDecoder) u16() uint16 {
	if b := d.bytes(2); b != nil {
		return binary.BigEndian.Uint16(b)
	}
	return 0
}
