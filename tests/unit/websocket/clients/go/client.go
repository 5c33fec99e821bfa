// Conformance against herd's echo WebSocket server with Go's gorilla client
// (Debian golang-github-gorilla-websocket-dev, built offline with
// GO111MODULE=off GOPATH=/usr/share/gocode): text, binary, large, fragmented,
// ping, and the close handshake both ways. Usage: client PORT. Exit 0 when
// every case passes; one line per case; every read has a deadline.
package main

import (
	"bytes"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/gorilla/websocket"
)

var failures int

func check(name string, ok bool) {
	if ok {
		fmt.Println("ok " + name)
	} else {
		fmt.Println("FAIL " + name)
		failures++
	}
}

func dial(url string) *websocket.Conn {
	d := websocket.Dialer{HandshakeTimeout: 10 * time.Second, WriteBufferSize: 4096}
	c, _, err := d.Dial(url, nil)
	if err != nil {
		fmt.Println("FAIL dial: " + err.Error())
		os.Exit(1)
	}
	c.SetReadDeadline(time.Now().Add(30 * time.Second))
	return c
}

func closeCode(err error) int {
	if ce, ok := err.(*websocket.CloseError); ok {
		return ce.Code
	}
	return -1
}

func main() {
	url := "ws://127.0.0.1:" + os.Args[1] + "/ws"
	c := dial(url)
	c.WriteMessage(websocket.TextMessage, []byte("hello"))
	t, m, err := c.ReadMessage()
	check("text", err == nil && t == websocket.TextMessage && string(m) == "hello")
	blob := bytes.Repeat([]byte{1, 2, 3, 4}, 25600)
	c.WriteMessage(websocket.BinaryMessage, blob)
	t, m, err = c.ReadMessage()
	check("binary 100 KiB", err == nil && t == websocket.BinaryMessage && bytes.Equal(m, blob))
	text := strings.Repeat("κόσμε ", 30000)
	c.WriteMessage(websocket.TextMessage, []byte(text))
	_, m, err = c.ReadMessage()
	check("large UTF-8 text", err == nil && string(m) == text)
	// NextWriter flushes a frame each time its 4 KiB buffer fills: a 20 KB
	// message goes out as several fragments.
	w, _ := c.NextWriter(websocket.TextMessage)
	frag := strings.Repeat("fragment κ ", 2000)
	for i := 0; i < len(frag); i += 1000 {
		end := i + 1000
		if end > len(frag) {
			end = len(frag)
		}
		w.Write([]byte(frag[i:end]))
	}
	w.Close()
	_, m, err = c.ReadMessage()
	check("fragmented", err == nil && string(m) == frag)
	pong := make(chan string, 1)
	c.SetPongHandler(func(d string) error { pong <- d; return nil })
	c.WriteControl(websocket.PingMessage, []byte("are you there"), time.Now().Add(5*time.Second))
	c.WriteMessage(websocket.TextMessage, []byte("after ping"))
	_, m, err = c.ReadMessage() // the pong handler runs inside ReadMessage
	got := ""
	select {
	case got = <-pong:
	default:
	}
	check("ping answered", err == nil && got == "are you there" && string(m) == "after ping")
	c.WriteMessage(websocket.CloseMessage, websocket.FormatCloseMessage(1000, "bye"))
	_, _, err = c.ReadMessage()
	check("close 1000 echoed", closeCode(err) == 1000)
	c.Close()

	c = dial(url)
	c.WriteMessage(websocket.TextMessage, []byte("close 4001"))
	_, _, err = c.ReadMessage()
	check("server close 4001", closeCode(err) == 4001)
	c.Close()

	c = dial(url)
	c.WriteMessage(websocket.BinaryMessage, make([]byte, (1<<20)+1))
	_, _, err = c.ReadMessage()
	check("over max_message: 1009", closeCode(err) == 1009)
	c.Close()
	if failures > 0 {
		os.Exit(1)
	}
}
