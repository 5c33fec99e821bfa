// Go peer of herd's actorbench: an actor is a goroutine whose mailbox is a
// buffered channel (Go's bounded ring buffer). Standard library only.
//
//	GOMAXPROCS=2 ./actorbench WORKLOAD ARGS... [--hibernate] [--workers N]
package main

import (
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Mailboxes are bounded; senders block when one is full. Each is sized to
// what its workload can have in flight: one message for ping-pong and ring
// actors (a bigger buffer only costs cache: ~35% fewer ring hops/s at 64),
// a ring buffer of 1024 for the fan-in receiver (64 halves its throughput).
const (
	singleCap = 1
	faninCap  = 1024
)

func usage(msg string) {
	fmt.Fprintf(os.Stderr, "actorbench: %s\nusage: skynet N | spawn_idle N [--hibernate] | "+
		"pingpong RTS | pingpong_many PAIRS RTS | ring N LAPS | fanin SENDERS MSGS | "+
		"call CALLS | restart RESTARTS  [--workers N]\n", msg)
	os.Exit(2)
}

func posInt(s string) int {
	n, err := strconv.Atoi(s)
	if err != nil || n <= 0 {
		usage("not a positive integer: " + s)
	}
	return n
}

func result(workload string, kv ...string) {
	fmt.Printf("RESULT impl=go workload=%s %s workers=%d\n",
		workload, strings.Join(kv, " "), runtime.GOMAXPROCS(0))
}

func kvf(k string, v float64) string { return fmt.Sprintf("%s=%.1f", k, v) }
func kvi(k string, v int64) string   { return fmt.Sprintf("%s=%d", k, v) }
func ms(d time.Duration) float64     { return float64(d.Nanoseconds()) / 1e6 }
func perS(n int, d time.Duration) int64 {
	return int64(float64(n) / d.Seconds())
}

func main() {
	var pos []string
	hibernate := false
	args := os.Args[1:]
	for i := 0; i < len(args); i++ {
		switch a := args[i]; {
		case a == "--hibernate":
			hibernate = true
		case a == "--workers":
			if i+1 >= len(args) {
				usage("--workers needs a value")
			}
			i++
			runtime.GOMAXPROCS(posInt(args[i]))
		case strings.HasPrefix(a, "-"):
			usage("unknown flag " + a)
		default:
			pos = append(pos, a)
		}
	}
	if len(pos) == 0 {
		usage("no workload")
	}
	w, n := pos[0], len(pos)-1
	switch {
	case w == "skynet" && n == 1:
		skynet(posInt(pos[1]))
	case w == "spawn_idle" && n == 1:
		spawnIdle(posInt(pos[1]), hibernate)
	case w == "pingpong" && n == 1:
		pingpong(posInt(pos[1]))
	case w == "pingpong_many" && n == 2:
		pingpongMany(posInt(pos[1]), posInt(pos[2]))
	case w == "ring" && n == 2:
		ring(posInt(pos[1]), posInt(pos[2]))
	case w == "fanin" && n == 2:
		fanin(posInt(pos[1]), posInt(pos[2]))
	case w == "call" && n == 1:
		call(posInt(pos[1]))
	case w == "restart" && n == 1:
		posInt(pos[1])
		// Go has no supervisor; a hand-written restart loop is not the same thing.
		result("restart", "unsupported=1")
	default:
		usage("bad workload/arguments: " + strings.Join(pos, " "))
	}
}

// ---- skynet: the classic Go version, a goroutine per node and an unbuffered
// channel back to the parent.

func skynetNode(c chan<- int, num, size int) {
	if size == 1 {
		c <- num
		return
	}
	rc := make(chan int)
	sub := size / 10
	for i := 0; i < 10; i++ {
		go skynetNode(rc, num+i*sub, sub)
	}
	sum := 0
	for i := 0; i < 10; i++ {
		sum += <-rc
	}
	c <- sum
}

func skynet(n int) {
	for m := n; m != 1; m /= 10 {
		if m%10 != 0 {
			usage("skynet N must be a power of 10")
		}
	}
	t0 := time.Now()
	c := make(chan int)
	go skynetNode(c, 0, n)
	sum := <-c
	d := time.Since(t0)
	if sum != n*(n-1)/2 {
		fmt.Fprintf(os.Stderr, "actorbench: skynet bad sum %d\n", sum)
		os.Exit(1)
	}
	result("skynet", kvi("sum", int64(sum)), kvf("wall_ms", ms(d)))
}

// ---- spawn_idle: "all started" = a WaitGroup that every goroutine marks Done
// as its last act before blocking on its mailbox; "all exited" = a second
// WaitGroup marked Done as the goroutine returns.

func rssBytes() int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		panic(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, "VmRSS:") {
			f := strings.Fields(line)
			kb, _ := strconv.ParseInt(f[1], 10, 64)
			return kb * 1024
		}
	}
	panic("no VmRSS")
}

func spawnIdle(n int, hibernate bool) {
	var started, exited sync.WaitGroup
	boxes := make([]chan struct{}, n)
	rss0 := rssBytes()
	t0 := time.Now()
	started.Add(n)
	exited.Add(n)
	for i := range boxes {
		mb := make(chan struct{}, 1)
		boxes[i] = mb
		go func() {
			defer exited.Done()
			started.Done()
			<-mb
		}()
	}
	started.Wait()
	dStart := time.Since(t0)
	rss1 := rssBytes()
	t1 := time.Now()
	for _, mb := range boxes {
		mb <- struct{}{}
	}
	exited.Wait()
	dStop := time.Since(t1)
	hib := "no"
	if hibernate {
		hib = "unsupported" // Go has no hibernate; ran as plain receive
	}
	result("spawn_idle", "hibernate="+hib, kvf("spawn_all_started_ms", ms(dStart)),
		kvi("bytes_per_actor", (rss1-rss0)/int64(n)), kvf("stop_all_exited_ms", ms(dStop)))
}

// ---- pingpong / pingpong_many

func startPair(rts int, done *sync.WaitGroup) {
	pingBox, pongBox := make(chan int, singleCap), make(chan int, singleCap)
	go func() { // pong
		for k := range pongBox {
			pingBox <- k
		}
	}()
	go func() { // ping
		for k := rts; k > 0; k-- {
			pongBox <- k
			<-pingBox
		}
		close(pongBox)
		done.Done()
	}()
}

func pingpong(rts int) {
	var done sync.WaitGroup
	done.Add(1)
	t0 := time.Now()
	startPair(rts, &done)
	done.Wait()
	d := time.Since(t0)
	result("pingpong", kvf("ns_per_rt", float64(d.Nanoseconds())/float64(rts)))
}

func pingpongMany(pairs, rts int) {
	var done sync.WaitGroup
	done.Add(pairs)
	t0 := time.Now()
	for i := 0; i < pairs; i++ {
		startPair(rts, &done)
	}
	done.Wait()
	d := time.Since(t0)
	result("pingpong_many", kvf("wall_ms", ms(d)), kvi("msgs_per_s", perS(pairs*rts*2, d)))
}

// ---- ring: node i forwards to node i+1, the last to node 0. A token carries
// the hops still to go; a negative token is the stop signal, sent once round.

func ring(n, laps int) {
	done := make(chan struct{})
	t0 := time.Now()
	boxes := make([]chan int, n)
	for i := range boxes {
		boxes[i] = make(chan int, singleCap)
	}
	for i := range boxes {
		in, next := boxes[i], boxes[(i+1)%n]
		go func() {
			for k := range in {
				switch {
				case k < 0:
					if next != boxes[0] {
						next <- k
					}
					return
				case k == 0:
					done <- struct{}{}
				default:
					next <- k - 1
				}
			}
		}()
	}
	dSpawn := time.Since(t0)
	hops := n * laps
	t1 := time.Now()
	boxes[0] <- hops
	<-done
	dRun := time.Since(t1)
	boxes[0] <- -1
	result("ring", kvf("spawn_ms", ms(dSpawn)), kvi("hops_per_s", perS(hops, dRun)))
}

// ---- fanin

func fanin(senders, msgs int) {
	done := make(chan struct{})
	box := make(chan int, faninCap)
	t0 := time.Now()
	go func() {
		for k := senders * msgs; k > 0; k-- {
			<-box
		}
		close(done)
	}()
	for s := 0; s < senders; s++ {
		go func() {
			for k := msgs; k > 0; k-- {
				box <- k
			}
		}()
	}
	<-done
	d := time.Since(t0)
	result("fanin", kvf("wall_ms", ms(d)), kvi("msgs_per_s", perS(senders*msgs, d)), "cross_core_pct=na")
}

// ---- call: a server goroutine reads requests from its channel; each request
// carries a fresh reply channel (a call's own reply address, as
// gen_server:call's monitor reference), answered with the request's value.

type callReq struct {
	v     int
	reply chan int
}

func call(n int) {
	reqs := make(chan callReq, singleCap)
	go func() {
		for r := range reqs {
			r.reply <- r.v
		}
	}()
	sum := 0
	t0 := time.Now()
	for i := 0; i < n; i++ {
		reply := make(chan int, 1)
		reqs <- callReq{i, reply}
		sum += <-reply
	}
	d := time.Since(t0)
	close(reqs)
	if sum != n*(n-1)/2 {
		fmt.Fprintf(os.Stderr, "actorbench: call bad sum %d\n", sum)
		os.Exit(1)
	}
	result("call", kvi("calls", int64(n)), kvf("ns_per_call", float64(d.Nanoseconds())/float64(n)))
}
