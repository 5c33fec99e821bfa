package main

// One WebSocket connection: its bounded queue and writer goroutine, its
// reader goroutine and the commands it runs, and the maps it is entered in.

import (
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/gorilla/websocket"
)

// frame is one queued text frame. A frame for many connections is prepared
// (encoded) once and shared; a frame for one is written as it is.
type frame struct {
	data     []byte
	prepared *websocket.PreparedMessage
}

// client is one WebSocket connection. Its queue holds frames not yet written
// to the socket: the slow-consumer limit counts them.
type client struct {
	user  string
	ws    *websocket.Conn
	rooms map[string]struct{} // only the reader goroutine touches it

	mu       sync.Mutex
	queue    []frame
	inFlight int // frames the writer has taken but not finished writing
	bytes    int // bytes of queue + in-flight frames
	closed   bool
	wake     chan struct{} // capacity 1: the queue is not empty, or closed
}

func textFrame(s string, recipients int) frame {
	f := frame{data: []byte(s)}
	if recipients > 1 {
		f.prepared, _ = websocket.NewPreparedMessage(websocket.TextMessage, f.data)
	}
	return f
}

func wakeUp(c *client) {
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

// enqueue hands f to c's writer; false when c is closed or has just been
// closed as a slow consumer.
func (g *gateway) enqueue(c *client, f frame) bool {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return false
	}
	if len(c.queue)+c.inFlight+1 > maxQueuedFrames || c.bytes+len(f.data) > maxQueuedBytes {
		c.closed = true
		c.queue = nil
		c.mu.Unlock()
		atomic.AddInt64(&g.dropped, 1)
		wakeUp(c)
		// Off this goroutine: the caller may hold g.mu, and the writer may
		// hold the socket for up to writeWait.
		go func() {
			g.forget(c)
			closeWith(c, websocket.ClosePolicyViolation, "slow consumer")
		}()
		return false
	}
	c.queue = append(c.queue, f)
	c.bytes += len(f.data)
	c.mu.Unlock()
	wakeUp(c)
	return true
}

func closeWith(c *client, code int, reason string) {
	// A slow consumer's close frame waits behind what the socket holds.
	c.ws.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(code, reason), time.Now().Add(writeWait))
	c.ws.Close()
}

// writer owns every data write on c and sends the heartbeat pings.
func (g *gateway) writer(c *client) {
	ping := time.NewTicker(g.cfg.pingInterval)
	defer ping.Stop()
	var batch []frame
	for {
		select {
		case <-c.wake:
		case <-ping.C:
			if c.ws.WriteControl(websocket.PingMessage, nil, time.Now().Add(writeWait)) != nil {
				c.ws.Close()
				return
			}
			continue
		}
		c.mu.Lock()
		batch, c.queue = c.queue, batch[:0]
		c.inFlight = len(batch)
		closed := c.closed
		c.mu.Unlock()
		if closed {
			return
		}
		for i, f := range batch {
			c.ws.SetWriteDeadline(time.Now().Add(writeWait))
			var err error
			if f.prepared != nil {
				err = c.ws.WritePreparedMessage(f.prepared)
			} else {
				err = c.ws.WriteMessage(websocket.TextMessage, f.data)
			}
			batch[i] = frame{}
			c.mu.Lock()
			c.inFlight--
			c.bytes -= len(f.data)
			c.mu.Unlock()
			if err != nil {
				c.ws.Close()
				return
			}
		}
		if cap(batch) > 64 { // a burst's backing array is not kept while idle
			batch = nil
		}
	}
}

// forget removes c from every map; idempotent.
func (g *gateway) forget(c *client) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if _, ok := g.all[c]; !ok {
		return
	}
	delete(g.all, c)
	atomic.AddInt64(&g.conns, -1)
	if set := g.users[c.user]; set != nil {
		delete(set, c)
		if len(set) == 0 {
			delete(g.users, c.user)
		}
	}
	for room := range c.rooms {
		g.leaveLocked(c, room)
	}
}

func (g *gateway) leaveLocked(c *client, room string) {
	if set := g.rooms[room]; set != nil {
		delete(set, c)
		if len(set) == 0 {
			delete(g.rooms, room)
		}
	}
}

// fanOut enqueues one frame for every member of m[key] and returns how many
// took it. Enqueueing never takes g.mu, so it runs under the read lock.
func (g *gateway) fanOut(m map[string]map[*client]struct{}, key, body string) int {
	n := 0
	g.mu.RLock()
	set := m[key]
	f := textFrame(body, len(set))
	for c := range set {
		if g.enqueue(c, f) {
			n++
		}
	}
	g.mu.RUnlock()
	atomic.AddInt64(&g.pushed, int64(n))
	return n
}

// reader runs the client's commands until the connection ends.
func (g *gateway) reader(c *client) {
	deadline := func() { c.ws.SetReadDeadline(time.Now().Add(2 * g.cfg.pingInterval)) }
	deadline()
	c.ws.SetReadLimit(int64(g.cfg.maxMessage))
	c.ws.SetPongHandler(func(string) error { deadline(); return nil })
	c.ws.SetPingHandler(func(data string) error {
		deadline()
		err := c.ws.WriteControl(websocket.PongMessage, []byte(data), time.Now().Add(writeWait))
		if ne, ok := err.(net.Error); ok && ne.Timeout() {
			return nil
		}
		return err
	})
	for {
		kind, data, err := c.ws.ReadMessage()
		if err != nil {
			if ne, ok := err.(net.Error); ok && ne.Timeout() {
				closeWith(c, closeTimeout, "no pong")
			}
			return
		}
		deadline()
		if kind == websocket.BinaryMessage {
			closeWith(c, websocket.CloseUnsupportedData, "binary frames are not accepted")
			return
		}
		if !utf8.Valid(data) {
			closeWith(c, websocket.CloseInvalidFramePayloadData, "text is not UTF-8")
			return
		}
		g.command(c, string(data))
	}
}

func (g *gateway) reply(c *client, s string) {
	g.enqueue(c, textFrame(s, 1))
}

func (g *gateway) command(c *client, line string) {
	verb, rest, _ := strings.Cut(line, " ")
	switch verb {
	case "join", "leave":
		if !validName.MatchString(rest) {
			g.reply(c, "error bad room name")
			return
		}
		g.mu.Lock()
		if verb == "join" {
			set := g.rooms[rest]
			if set == nil {
				set = map[*client]struct{}{}
				g.rooms[rest] = set
			}
			set[c] = struct{}{}
			c.rooms[rest] = struct{}{}
		} else if _, in := c.rooms[rest]; in {
			delete(c.rooms, rest)
			g.leaveLocked(c, rest)
		}
		g.mu.Unlock()
		g.reply(c, "ok "+verb+" "+rest)
	case "say":
		room, text, ok := strings.Cut(rest, " ")
		if !ok || !validName.MatchString(room) {
			g.reply(c, "error usage: say <room> <text>")
			return
		}
		g.fanOut(g.rooms, room, room+" "+c.user+" "+text)
	default:
		g.reply(c, "error unknown command")
	}
}
