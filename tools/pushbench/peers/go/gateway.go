// gateway: the Go peer of herd's push gateway (tools/pushbench). It speaks
// push gateway protocol version 1 (push-gateway-protocol.md in the project's
// shared notes; docs in tools/pushbench/README.md) the way a Go
// programmer would write it: net/http for HTTP, gorilla/websocket for
// WebSocket, a reader and a writer goroutine per connection, presence and
// rooms in maps under one RWMutex.
//
// Built offline from Debian's packages:
//
//	cd tools/pushbench/peers/go && GO111MODULE=off GOPATH=/usr/share/gocode go build -o gateway .
//
// This file: HTTP, the command line and the drain; conn.go: a connection.
//
// --observer and --metrics are accepted for command-line compatibility with
// herd's gateway and ignored (Go has no herd observer).
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"os"
	"os/signal"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/gorilla/websocket"
)

const (
	maxQueuedFrames = 1000
	maxQueuedBytes  = 1 << 20
	writeWait       = 10 * time.Second
	headTimeout     = 10 * time.Second
	closeTimeout    = 4000 // our close code: no pong for two ping intervals
)

var validName = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,64}$`)

type config struct {
	port, workers, maxMessage int
	bind                      string
	pingInterval              time.Duration
	maxConns                  int64 // math.MaxInt64: infinity
}

type gateway struct {
	cfg   config
	mu    sync.RWMutex
	users map[string]map[*client]struct{}
	rooms map[string]map[*client]struct{}
	all   map[*client]struct{}
	// draining: SIGTERM came; a connection upgraded since gets its 1001
	// from its own handler, counted in closing. upgrading counts handlers
	// between the upgrade check and their entry in all.
	draining  bool
	upgrading int
	closing   sync.WaitGroup
	conns     int64
	pushed    int64
	dropped   int64
	up        websocket.Upgrader
}

func newGateway(cfg config) *gateway {
	g := &gateway{cfg: cfg, users: map[string]map[*client]struct{}{},
		rooms: map[string]map[*client]struct{}{}, all: map[*client]struct{}{}}
	// Small buffers and a shared write-buffer pool: what gorilla's docs
	// recommend for many mostly idle connections.
	g.up = websocket.Upgrader{ReadBufferSize: 1024, WriteBufferSize: 1024, WriteBufferPool: &sync.Pool{},
		CheckOrigin: func(*http.Request) bool { return true }}
	return g
}

// ---- HTTP ----

func (g *gateway) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	path := r.URL.Path
	switch {
	case path == "/ws":
		if allow(w, r, http.MethodGet) {
			g.serveWS(w, r)
		}
	case path == "/healthz":
		if allow(w, r, http.MethodGet) {
			io.WriteString(w, "ok")
		}
	case path == "/stats":
		if allow(w, r, http.MethodGet) {
			g.mu.RLock()
			users, rooms := len(g.users), len(g.rooms)
			g.mu.RUnlock()
			w.Header().Set("Content-Type", "application/json")
			json.NewEncoder(w).Encode(map[string]int64{"connections": atomic.LoadInt64(&g.conns),
				"users": int64(users), "rooms": int64(rooms), "pushed": atomic.LoadInt64(&g.pushed),
				"dropped": atomic.LoadInt64(&g.dropped)})
		}
	case strings.HasPrefix(path, "/push/user/"):
		if allow(w, r, http.MethodPost) {
			g.push(w, r, g.users, strings.TrimPrefix(path, "/push/user/"))
		}
	case strings.HasPrefix(path, "/push/room/"):
		if allow(w, r, http.MethodPost) {
			g.push(w, r, g.rooms, strings.TrimPrefix(path, "/push/room/"))
		}
	default:
		http.Error(w, "not found", http.StatusNotFound)
	}
}

func allow(w http.ResponseWriter, r *http.Request, method string) bool {
	if r.Method == method {
		return true
	}
	w.Header().Set("Allow", method)
	http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
	return false
}

func (g *gateway) push(w http.ResponseWriter, r *http.Request, m map[string]map[*client]struct{}, key string) {
	if !validName.MatchString(key) {
		http.Error(w, "bad name", http.StatusBadRequest)
		return
	}
	limit := int64(g.cfg.maxMessage)
	if r.ContentLength > limit {
		http.Error(w, "body over the limit", http.StatusRequestEntityTooLarge)
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, limit))
	if err != nil {
		if _, tooBig := err.(*http.MaxBytesError); tooBig {
			http.Error(w, "body over the limit", http.StatusRequestEntityTooLarge)
		} else {
			http.Error(w, "bad body", http.StatusBadRequest)
		}
		return
	}
	if !utf8.Valid(body) {
		http.Error(w, "body is not UTF-8", http.StatusBadRequest)
		return
	}
	n := g.fanOut(m, key, string(body))
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(`{"delivered":}`)+len(strconv.Itoa(n))))
	fmt.Fprintf(w, `{"delivered":%d}`, n)
}

func (g *gateway) serveWS(w http.ResponseWriter, r *http.Request) {
	user := r.URL.Query().Get("user")
	if !validName.MatchString(user) {
		http.Error(w, "bad user", http.StatusBadRequest)
		return
	}
	if !websocket.IsWebSocketUpgrade(r) {
		http.Error(w, "not a WebSocket upgrade", http.StatusBadRequest)
		return
	}
	g.mu.Lock()
	if g.draining || atomic.AddInt64(&g.conns, 1) > g.cfg.maxConns {
		if !g.draining {
			atomic.AddInt64(&g.conns, -1)
		}
		g.mu.Unlock()
		http.Error(w, "too many connections", http.StatusServiceUnavailable)
		return
	}
	g.upgrading++
	g.mu.Unlock()
	ws, err := g.up.Upgrade(w, r, nil) // answers 400 itself on a bad handshake
	if err != nil {
		atomic.AddInt64(&g.conns, -1)
		g.mu.Lock()
		g.upgrading--
		g.mu.Unlock()
		return
	}
	if hc, ok := ws.UnderlyingConn().(*headConn); ok {
		hc.upgraded.Store(true)
	}
	c := &client{user: user, ws: ws, rooms: map[string]struct{}{}, wake: make(chan struct{}, 1)}
	g.mu.Lock()
	g.upgrading--
	if g.draining {
		g.closing.Add(1)
		g.mu.Unlock()
		closeWith(c, websocket.CloseGoingAway, "server shutting down")
		g.closing.Done()
		return
	}
	g.all[c] = struct{}{}
	set := g.users[user]
	if set == nil {
		set = map[*client]struct{}{}
		g.users[user] = set
	}
	set[c] = struct{}{}
	g.mu.Unlock()
	// As gorilla's chat example: the handler returns, so its request and
	// stack are not kept for the connection's lifetime.
	go g.writer(c)
	go func() {
		g.reader(c)
		g.forget(c)
		c.mu.Lock()
		c.closed = true
		c.mu.Unlock()
		wakeUp(c)
		ws.Close()
	}()
}

// headConn answers 408 when a request head takes longer than headTimeout:
// net/http only closes such a connection. A read that fails on the server's
// own header deadline (not on one set in the past to abort a background
// read, and not after a WebSocket upgrade) is that case.
//
// The contract's "a request head slower than 10 s in total" runs from the
// head's first byte, as herd's gateway times it. net/http does so for a
// keep-alive connection's later requests (it waits for bytes, then sets the
// header deadline), but for the first one it sets the deadline at accept. So
// until the connection's first byte a future deadline is held back and set
// when that byte arrives, as long again from then (net/http's own deadlines
// in the past, which abort a read, pass through).
type headConn struct {
	net.Conn
	deadline atomic.Int64 // unix ns of the last read deadline set
	upgraded atomic.Bool
	answered atomic.Bool // net/http may read again after the timeout
	mu       sync.Mutex
	gotByte  bool          // guarded by mu
	heldBack time.Duration // guarded by mu: a deadline's distance, set at the first byte
}

func (c *headConn) SetReadDeadline(t time.Time) error {
	if c.holdBack(t) {
		return nil
	}
	c.deadline.Store(t.UnixNano())
	return c.Conn.SetReadDeadline(t)
}

func (c *headConn) SetDeadline(t time.Time) error {
	if c.holdBack(t) {
		return c.Conn.SetWriteDeadline(t)
	}
	c.deadline.Store(t.UnixNano())
	return c.Conn.SetDeadline(t)
}

// holdBack reports whether t is a future read deadline set before the first
// byte, which it then keeps for later (clearing the socket's read deadline).
func (c *headConn) holdBack(t time.Time) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.gotByte {
		return false
	}
	d := time.Until(t)
	if t.IsZero() || d <= 0 {
		c.heldBack = 0
		return false
	}
	c.heldBack = d
	c.deadline.Store(0)
	c.Conn.SetReadDeadline(time.Time{})
	return true
}

func (c *headConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if n > 0 {
		c.mu.Lock()
		if !c.gotByte {
			c.gotByte = true
			if c.heldBack > 0 {
				t := time.Now().Add(c.heldBack)
				c.deadline.Store(t.UnixNano())
				c.Conn.SetReadDeadline(t)
			}
		}
		c.mu.Unlock()
	}
	if ne, ok := err.(net.Error); ok && ne.Timeout() && !c.upgraded.Load() &&
		time.Now().UnixNano() >= c.deadline.Load() && c.deadline.Load() > time.Now().Add(-time.Minute).UnixNano() &&
		c.answered.CompareAndSwap(false, true) {
		c.Conn.Write([]byte("HTTP/1.1 408 Request Timeout\r\nContent-Type: text/plain\r\n" +
			"Content-Length: 16\r\nConnection: close\r\n\r\nrequest timeout\n"))
	}
	return n, err
}

type headListener struct{ net.Listener }

func (l headListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &headConn{Conn: c}, nil
}

// ---- command line and lifetime ----

func usage(msg string) {
	fmt.Fprintf(os.Stderr, "gateway: %s\nusage: gateway --port P [--bind ADDR] [--workers N] [--ping-interval-ms MS]\n"+
		"       [--max-message-bytes N] [--max-connections N|infinity] [--observer PATH] [--metrics 127.0.0.1:PORT]\n", msg)
	os.Exit(2)
}

func parseFlags() config {
	fs := flag.NewFlagSet("gateway", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	port := fs.Int("port", -1, "")
	bind := fs.String("bind", "127.0.0.1", "")
	workers := fs.Int("workers", runtime.NumCPU(), "")
	pingMs := fs.Int("ping-interval-ms", 25000, "")
	maxMsg := fs.Int("max-message-bytes", 65536, "")
	maxConns := fs.String("max-connections", "infinity", "")
	fs.String("observer", "", "")
	fs.String("metrics", "", "")
	if err := fs.Parse(os.Args[1:]); err != nil {
		usage(err.Error())
	}
	if fs.NArg() != 0 {
		usage("unexpected argument " + fs.Arg(0))
	}
	cfg := config{port: *port, bind: *bind, workers: *workers, maxMessage: *maxMsg,
		pingInterval: time.Duration(*pingMs) * time.Millisecond, maxConns: math.MaxInt64}
	switch {
	case cfg.port < 0 || cfg.port > 65535:
		usage("--port P is required, 0..65535")
	case cfg.workers < 1:
		usage("--workers wants a positive integer")
	case *pingMs < 1:
		usage("--ping-interval-ms wants a positive integer")
	case cfg.maxMessage < 1:
		usage("--max-message-bytes wants a positive integer")
	case net.ParseIP(cfg.bind) == nil:
		usage("--bind wants a numeric IP address")
	}
	if *maxConns != "infinity" {
		n, err := strconv.ParseInt(*maxConns, 10, 64)
		if err != nil || n < 0 {
			usage("--max-connections wants N or infinity")
		}
		cfg.maxConns = n
	}
	return cfg
}

func main() {
	cfg := parseFlags()
	runtime.GOMAXPROCS(cfg.workers)
	g := newGateway(cfg)
	ln, err := net.Listen("tcp", net.JoinHostPort(cfg.bind, strconv.Itoa(cfg.port)))
	if err != nil {
		fmt.Fprintln(os.Stderr, "gateway: listen:", err)
		os.Exit(1)
	}
	srv := &http.Server{Handler: g, ReadHeaderTimeout: headTimeout, IdleTimeout: 5 * time.Minute,
		// net/http allows MaxHeaderBytes + 4096 bytes of head; this makes it 8 KiB.
		MaxHeaderBytes: 8192 - 4096}
	addr := ln.Addr().(*net.TCPAddr)
	fmt.Printf("listening on %s:%d\n", cfg.bind, addr.Port)
	os.Stdout.Sync()

	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT)
	served := make(chan error, 1)
	go func() { served <- srv.Serve(headListener{ln}) }()
	select {
	case err := <-served:
		fmt.Fprintln(os.Stderr, "gateway: serve:", err)
		os.Exit(1)
	case <-sigs:
	}
	// Drain: stop accepting and finish HTTP responses in flight (Shutdown),
	// while every WebSocket gets its 1001.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	shutdown := make(chan struct{})
	go func() { srv.Shutdown(ctx); close(shutdown) }()
	g.mu.Lock()
	g.draining = true
	for wait := 0; g.upgrading > 0 && wait < 200; wait++ { // up to 2 s
		g.mu.Unlock()
		time.Sleep(10 * time.Millisecond)
		g.mu.Lock()
	}
	conns := make([]*client, 0, len(g.all))
	for c := range g.all {
		conns = append(conns, c)
	}
	g.mu.Unlock()
	var wg sync.WaitGroup
	for _, c := range conns {
		wg.Add(1)
		go func(c *client) { defer wg.Done(); closeWith(c, websocket.CloseGoingAway, "server shutting down") }(c)
	}
	wg.Wait()
	<-shutdown
	g.closing.Wait()
	os.Exit(0)
}
