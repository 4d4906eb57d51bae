// Package s3test runs a real S3-compatible server for tests: versitygw
// with a posix backend in a temp folder, on a loopback port. Tests that
// need it skip when versitygw is not on PATH — except in CI (CI set) or
// with BOTD_REQUIRE_S3=1, where its absence fails them, so they cannot
// pass unseen.
package s3test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/botd-dev/botd/mediaregistry/s3store"
)

// Binary is the server the tests run.
const Binary = "versitygw"

// Install is how to get it.
const Install = "make testdeps"

const (
	accessKey = "botdtestaccess"
	secretKey = "botdtestsecret0123456789"
	// startTimeout bounds the wait for the server to answer; it is a
	// deadline for a condition, not a sleep.
	startTimeout = 30 * time.Second
)

// Server is one versitygw process; Stop and Start keep its port and data.
type Server struct {
	tb     testing.TB
	bin    string
	dir    string // the posix backend's root: one folder per bucket
	addr   string
	logDir string

	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{}
}

// Required reports whether the S3 tests must run here.
func Required() bool { return os.Getenv("CI") != "" || os.Getenv("BOTD_REQUIRE_S3") == "1" }

// Start runs versitygw for the test, stopped when it ends. It skips the
// test when versitygw is not installed, unless Required.
func Start(tb testing.TB) *Server {
	tb.Helper()
	bin, err := exec.LookPath(Binary)
	if err != nil {
		msg := fmt.Sprintf("%s is not on PATH, so the S3 tests cannot run; `%s` installs it into .tools/bin (make test puts that on PATH), or `go install github.com/versity/versitygw/cmd/versitygw@v1.8.0`", Binary, Install)
		if Required() {
			tb.Fatal(msg + " — required here (CI or BOTD_REQUIRE_S3=1)")
		}
		tb.Skip(msg)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	s := &Server{tb: tb, bin: bin, dir: tb.TempDir(), addr: addr, logDir: tb.TempDir()}
	tb.Cleanup(s.Stop)
	s.Start()
	return s
}

// Endpoint is the server's URL.
func (s *Server) Endpoint() string { return "http://" + s.addr }

// Config is a store config for bucket (created by NewStore).
func (s *Server) Config(bucket string) s3store.Config {
	return s3store.Config{Endpoint: s.Endpoint(), Bucket: bucket, AccessKey: accessKey, SecretKey: secretKey, PathStyle: true, Prefix: "media/"}
}

// NewStore returns a store on a new bucket of this server.
func (s *Server) NewStore(tb testing.TB, bucket string) *s3store.Store {
	tb.Helper()
	st, err := s3store.New(s.Config(bucket))
	if err != nil {
		tb.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	if err := st.MakeBucket(ctx); err != nil {
		tb.Fatal(err)
	}
	return st
}

// Dir is the backend folder: <Dir>/<bucket>/<key> holds each object.
func (s *Server) Dir() string { return s.dir }

// Start (re)starts the server on its port and waits until it answers.
func (s *Server) Start() {
	s.tb.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd != nil {
		return
	}
	logf, err := os.OpenFile(filepath.Join(s.logDir, "versitygw.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		s.tb.Fatal(err)
	}
	defer logf.Close()
	cmd := exec.Command(s.bin, "--access", accessKey, "--secret", secretKey, "--port", s.addr, "--quiet", "posix", s.dir)
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		s.tb.Fatalf("starting %s: %v", Binary, err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	s.cmd, s.done = cmd, done
	if err := waitUp(s.Endpoint(), done); err != nil {
		log, _ := os.ReadFile(filepath.Join(s.logDir, "versitygw.log"))
		cmd.Process.Kill()
		<-done
		s.cmd = nil
		s.tb.Fatalf("%s did not start on %s: %v\n%s", Binary, s.addr, err, log)
	}
}

// Stop kills the server (as a crash or a lost network would) and waits
// for it to exit; the data stays for Start.
func (s *Server) Stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil {
		return
	}
	s.cmd.Process.Kill()
	<-s.done
	s.cmd = nil
}

// waitUp polls until the server answers HTTP (any status: an
// unauthenticated request is refused, which proves it is serving), the
// process exits, or the deadline passes.
func waitUp(endpoint string, exited <-chan struct{}) error {
	deadline := time.Now().Add(startTimeout)
	client := &http.Client{Timeout: time.Second}
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		resp, err := client.Get(endpoint + "/")
		if err == nil {
			resp.Body.Close()
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("no answer within %v: %w", startTimeout, err)
		}
		select {
		case <-exited:
			return errors.New("the process exited")
		case <-tick.C:
		}
	}
}
