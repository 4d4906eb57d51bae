package main

import (
	"io"
	"log/slog"
	"net"
	"strconv"
	"testing"
)

// The default web address, taken by another program, moves to the next
// free port instead of failing a newcomer's first start.
func TestFreeListenMovesOffATakenPort(t *testing.T) {
	held, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	_, port, _ := net.SplitHostPort(held.Addr().String())
	taken, _ := strconv.Atoi(port)
	d := &daemon{log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	got := d.freeListen(held.Addr().String())
	host, p, err := net.SplitHostPort(got)
	n, _ := strconv.Atoi(p)
	if err != nil || host != "127.0.0.1" || n <= taken || n > taken+20 {
		t.Fatalf("freeListen(%s) = %s, want a later port of the same host", held.Addr(), got)
	}
	l, err := net.Listen("tcp", got)
	if err != nil {
		t.Fatalf("the port it chose is not free: %v", err)
	}
	l.Close()
	if again := d.freeListen(got); again != got {
		t.Errorf("a free address moved: %s → %s", got, again)
	}
}
