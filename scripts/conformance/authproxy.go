//go:build ignore

// authproxy stands between the MCP conformance suite and
// `botd mcp --http`. The suite has no way to send an Authorization header,
// and botd must not learn an unauthenticated mode just to be tested, so
// this proxy adds the bearer token and forwards everything else untouched:
// the Host and Origin headers the suite sends reach botd as they are, so
// its own DNS-rebinding check is what the suite measures.
//
// scripts/conformance.sh builds and runs it:
//
//	go build -o authproxy scripts/conformance/authproxy.go
//	BOTD_MCP_TOKEN=... ./authproxy -target http://127.0.0.1:PORT -addr-file FILE
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"os/signal"
	"syscall"
	"time"
)

func main() {
	listen := flag.String("listen", "127.0.0.1:0", "address to listen on (loopback)")
	target := flag.String("target", "", "botd base URL, e.g. http://127.0.0.1:8765")
	addrFile := flag.String("addr-file", "", "write the address actually listened on to this file")
	flag.Parse()
	// The token comes from the environment so it is not visible in ps.
	token := os.Getenv("BOTD_MCP_TOKEN")
	if *target == "" || token == "" {
		log.Fatal("need -target and BOTD_MCP_TOKEN")
	}
	u, err := url.Parse(*target)
	if err != nil {
		log.Fatalf("target: %v", err)
	}
	rp := &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.SetURL(u)
			// SetURL points Host at the target; keep the client's, since the
			// Host header is what the DNS-rebinding scenario is about.
			r.Out.Host = r.In.Host
			r.Out.Header.Set("Authorization", "Bearer "+token)
		},
		// SSE responses must reach the suite as they are written.
		FlushInterval: -1,
	}
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		log.Fatalf("listen: %v", err)
	}
	if *addrFile != "" {
		if err := os.WriteFile(*addrFile, []byte(ln.Addr().String()), 0o600); err != nil {
			log.Fatalf("addr file: %v", err)
		}
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	srv := &http.Server{Handler: rp, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		srv.Shutdown(sctx)
	}()
	fmt.Fprintf(os.Stderr, "authproxy: %s -> %s\n", ln.Addr(), u)
	if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		log.Fatal(err)
	}
}
