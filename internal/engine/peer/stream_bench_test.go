package peer

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"syscall"
	"testing"
	"time"
)

// BenchmarkPeerCall: one forwarded request (a 64-byte body, a 32-byte
// answer with a header) through Client.Call to a real Server on loopback,
// 32 callers at once, over a peer stream and as HTTP/1.1 exchanges. cpu-us/op
// is the CPU of client and server together (the process's user and system
// time) per request.
//
//	go test -run - -bench PeerCall -benchtime 3s -count 3 ./internal/engine/peer
func BenchmarkPeerCall(b *testing.B) {
	for _, mode := range []string{"stream", "http"} {
		b.Run(mode, func(b *testing.B) {
			s := NewServer(NewSecret("s"), 1024)
			s.Handle(http.MethodPost, "propose", func(ctx context.Context, w http.ResponseWriter, r *http.Request) {
				w.Header().Set("X-Slot-Group", "1")
				_, _ = w.Write([]byte("0123456789abcdef0123456789abcdef"))
			})
			ts := httptest.NewServer(s)
			defer ts.Close()
			defer s.Close()
			addr := strings.TrimPrefix(ts.URL, "http://")
			c := NewClient(NewSecret("s"), 256)
			defer c.Close()
			if mode == "http" {
				c.stream.close() // a closed stream transport calls over HTTP
			}
			body := make([]byte, 64)
			b.SetParallelism(16)
			start := cpuTime()
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
					resp, _, err := c.Call(ctx, http.MethodPost, addr, "propose", body, nil)
					if err == nil {
						_, err = ReadBody(resp)
					}
					cancel()
					if err != nil {
						b.Error(err)
						return
					}
				}
			})
			b.StopTimer()
			b.ReportMetric(float64((cpuTime()-start).Microseconds())/float64(b.N), "cpu-us/op")
		})
	}
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
