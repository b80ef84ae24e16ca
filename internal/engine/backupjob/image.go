package backupjob

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"time"

	"golang.org/x/time/rate"

	"github.com/slotmeta/slotmeta/internal/engine/fsm"
	"github.com/slotmeta/slotmeta/internal/engine/peer"
	"github.com/slotmeta/slotmeta/internal/slotstore"
)

// The backup-image peer endpoint: this node's replica of a group writes
// its image into the answer (after a read round, rate-limited), and says
// what it was cut at in a trailer once the image is whole. An answer
// without the trailer is an image cut short.

// hdrImage is the trailer carrying the image's fsm.ImageInfo (JSON).
const hdrImage = "X-Slotmeta-Image"

// maxRemoteImage bounds a remote image's call: a peer call's own bound.
const maxRemoteImage = 60 * time.Second

type imageRequest struct {
	Group slotstore.GroupID `json:"group"`
}

// Register puts the backup-image endpoint on the node's peer server.
func (r *Runner) Register(s *peer.Server) {
	s.Handle(http.MethodPost, "backup-image", r.serveImage)
}

func (r *Runner) serveImage(ctx context.Context, w http.ResponseWriter, req *http.Request) {
	var q imageRequest
	if err := json.NewDecoder(io.LimitReader(req.Body, 4096)).Decode(&q); err != nil || q.Group == 0 {
		peer.WriteError(w, http.StatusBadRequest, slotstore.Errorf(slotstore.CodeInvalidArgument, "a backup image request names a group"))
		return
	}
	if !r.cfg.Host.HasReplica(q.Group) {
		peer.WriteError(w, http.StatusServiceUnavailable, slotstore.Errorf(slotstore.CodeRouteNotReady, "node %d holds no replica of group %d", r.cfg.Host.NodeID(), q.Group))
		return
	}
	w.Header().Set("Trailer", hdrImage)
	w.Header().Set("Content-Type", "application/octet-stream")
	out := &countingWriter{w: w}
	info, err := r.cfg.Host.LocalImage(ctx, q.Group, r.serve.writer(ctx, out))
	if err != nil {
		if out.n == 0 {
			peer.WriteError(w, http.StatusServiceUnavailable, err)
		}
		return // cut short: no trailer
	}
	b, _ := json.Marshal(info)
	w.Header().Set(hdrImage, string(b))
}

// remoteImage asks node src for group g's image, into w.
func (r *Runner) remoteImage(ctx context.Context, src slotstore.NodeID, g slotstore.GroupID, w io.Writer) (fsm.ImageInfo, error) {
	var info fsm.ImageInfo
	addr := r.cfg.Host.PeerAddr(src)
	if addr == "" || r.cfg.Peers == nil {
		return info, slotstore.Errorf(slotstore.CodeRouteNotReady, "the peer address of node %d is unknown", src)
	}
	ctx, cancel := context.WithTimeout(ctx, maxRemoteImage)
	defer cancel()
	body, _ := json.Marshal(imageRequest{Group: g})
	resp, _, err := r.cfg.Peers.Call(ctx, http.MethodPost, addr, "backup-image", body, nil)
	if err != nil {
		return info, err
	}
	defer resp.Body.Close()
	if _, err := io.Copy(w, resp.Body); err != nil {
		return info, fmt.Errorf("the image from node %d: %w", src, err)
	}
	t := resp.Trailer.Get(hdrImage)
	if t == "" {
		return info, fmt.Errorf("the image from node %d was cut short", src)
	}
	if err := json.Unmarshal([]byte(t), &info); err != nil {
		return info, fmt.Errorf("the image from node %d: undecodable trailer: %w", src, err)
	}
	return info, nil
}

type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// limiter bounds the bytes a node reads for images, for every backup at
// once (its own and other nodes'), so that serving goes on.
// The clock is injected (now, sleep) so that a test holds the rate
// without waiting for it.
type limiter struct {
	l     *rate.Limiter
	now   func() time.Time
	sleep func(ctx context.Context, d time.Duration) error
}

// limitBurst is the most one wait lets through.
const limitBurst = 256 << 10

func newLimiter(bytesPerSec int) *limiter {
	return &limiter{l: rate.NewLimiter(rate.Limit(bytesPerSec), limitBurst), now: time.Now, sleep: sleepCtx}
}

// sleepCtx waits d, or less if ctx ends first.
func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// wait waits for k bytes' turn, within ctx.
func (l *limiter) wait(ctx context.Context, k int) error {
	now := l.now()
	r := l.l.ReserveN(now, k)
	if !r.OK() {
		return fmt.Errorf("backups: %d bytes exceed the read limit's burst", k)
	}
	if d := r.DelayFrom(now); d > 0 {
		if err := l.sleep(ctx, d); err != nil {
			r.CancelAt(l.now())
			return err
		}
	}
	return nil
}

// writer is w with every write waiting for its bytes' turn (within ctx).
func (l *limiter) writer(ctx context.Context, w io.Writer) io.Writer {
	return writerFunc(func(p []byte) (int, error) {
		n := 0
		for len(p) > 0 {
			k := min(len(p), limitBurst)
			if err := l.wait(ctx, k); err != nil {
				return n, err
			}
			m, err := w.Write(p[:k])
			n += m
			if err != nil {
				return n, err
			}
			p = p[k:]
		}
		return n, nil
	})
}
