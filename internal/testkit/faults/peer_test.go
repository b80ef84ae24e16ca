package faults

import (
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
)

func TestFaultPeerTransport(t *testing.T) {
	var served atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		served.Add(1)
		_, _ = io.WriteString(w, "ok")
	}))
	defer srv.Close()
	n := NewNetwork()
	n.Register(2, strings.TrimPrefix(srv.URL, "http://"))
	base := &http.Transport{}
	defer base.CloseIdleConnections()
	client := &http.Client{Transport: n.PeerTransport(1)(base)}
	get := func() error {
		resp, err := client.Get(srv.URL)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		_, err = io.ReadAll(resp.Body)
		return err
	}
	if err := get(); err != nil || served.Load() != 1 {
		t.Fatalf("open network: %v, served %d", err, served.Load())
	}

	n.DropOneWay(1, 2) // the request never leaves: a dial error
	err := get()
	var op *net.OpError
	if !errors.Is(err, ErrBlocked) || !errors.As(err, &op) || op.Op != "dial" || served.Load() != 1 {
		t.Fatalf("request cut: %v (op %+v), served %d", err, op, served.Load())
	}

	n.Heal()
	n.DropOneWay(2, 1) // the peer acts, its answer is lost
	err = get()
	if !errors.Is(err, ErrBlocked) || !errors.As(err, &op) || op.Op == "dial" || served.Load() != 2 {
		t.Fatalf("reply cut: %v, served %d", err, served.Load())
	}

	n.Heal()
	if err := get(); err != nil || served.Load() != 3 {
		t.Fatalf("healed: %v, served %d", err, served.Load())
	}
}
