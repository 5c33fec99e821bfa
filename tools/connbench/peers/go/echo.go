// echo: the Go peer for connbench. One goroutine per connection, a plain
// read/write loop over a 4 KiB buffer (what io.Copy does, minus its
// ReaderFrom/WriterTo shortcuts, so every implementation does the same work).
//
//	echo [--port P] [--procs N]   (P = 0 picks a free port; N sets GOMAXPROCS)
//
// Standard library only: it is built offline. Go >= 1.19 raises the soft
// RLIMIT_NOFILE to the hard limit by itself, sets TCP_NODELAY on accepted
// connections by default and sizes the listen backlog from somaxconn.
package main

import (
	"flag"
	"fmt"
	"net"
	"os"
	"os/signal"
	"runtime"
	"syscall"
)

func serve(c net.Conn) {
	defer c.Close()
	buf := make([]byte, 4096)
	for {
		n, err := c.Read(buf)
		if n > 0 {
			if _, werr := c.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

func main() {
	port := flag.Int("port", 0, "TCP port on 127.0.0.1 (0: any free port)")
	procs := flag.Int("procs", runtime.NumCPU(), "GOMAXPROCS")
	flag.Parse()
	if flag.NArg() != 0 || *procs < 1 || *port < 0 || *port > 65535 {
		fmt.Fprintln(os.Stderr, "usage: echo [--port P] [--procs N]")
		os.Exit(2)
	}
	runtime.GOMAXPROCS(*procs)

	ln, err := net.Listen("tcp4", fmt.Sprintf("127.0.0.1:%d", *port))
	if err != nil {
		fmt.Fprintln(os.Stderr, "listen:", err)
		os.Exit(1)
	}
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT)
	go func() {
		<-sigs
		os.Exit(0)
	}()
	fmt.Printf("listening on %s\n", ln.Addr().String())
	os.Stdout.Sync()
	for {
		c, err := ln.Accept()
		if err != nil {
			// EMFILE and the like are transient: keep accepting.
			continue
		}
		go serve(c)
	}
}
