package testserver

import (
	"errors"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// proxyDialTimeout bounds how long the proxy waits to connect to its target for each
// accepted connection.
const proxyDialTimeout = 2 * time.Second

// proxyBufferBytes is the size of each direction's copy buffer.
const proxyBufferBytes = 32 << 10

// Proxy is a loopback TCP proxy in front of a server, for fault tests. Each connection it
// accepts on Addr is forwarded to the target over a connection of its own, byte for byte.
// Blackhole makes it stop forwarding in both directions without closing anything, as a dead
// network path, a hung middlebox or a frozen peer would: the client's writes succeed, no
// answer comes, and no FIN or RST ever arrives. Resume forwards again, held data first.
//
// Create one with StartProxy; it is closed automatically when the test finishes. All methods
// are safe for concurrent use.
type Proxy struct {
	tb     testing.TB
	target string
	lis    net.Listener

	mu     sync.Mutex
	conns  map[net.Conn]struct{} // every open connection, both sides
	resume chan struct{}         // nil while forwarding; closed by Resume
	closed bool

	done     chan struct{} // closed by Close: wakes every copier held by Blackhole
	wg       sync.WaitGroup
	once     sync.Once
	accepted atomic.Int64
}

// StartProxy starts a proxy listening on 127.0.0.1 with an ephemeral port that forwards to
// target ("host:port"), and registers a t.Cleanup that closes it. It calls t.Fatal if it
// cannot listen.
func StartProxy(t testing.TB, target string) *Proxy {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("testserver: proxy listen: %v", err)
	}
	p := &Proxy{
		tb:     t,
		target: target,
		lis:    lis,
		conns:  make(map[net.Conn]struct{}),
		done:   make(chan struct{}),
	}
	p.wg.Add(1)
	go p.acceptLoop()
	t.Cleanup(p.Close)
	return p
}

// Addr returns the address the proxy listens on, as "127.0.0.1:port".
func (p *Proxy) Addr() string { return p.lis.Addr().String() }

// Accepted returns the number of connections the proxy has accepted.
func (p *Proxy) Accepted() int64 { return p.accepted.Load() }

// Blackhole stops forwarding in both directions, on open connections and on connections
// accepted later, without closing any: bytes already read are held, and the rest wait in the
// kernel's buffers. It is a no-op while blackholed.
func (p *Proxy) Blackhole() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.resume == nil {
		p.resume = make(chan struct{})
	}
}

// Resume forwards again, held bytes first. It is a no-op while forwarding.
func (p *Proxy) Resume() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.resume != nil {
		close(p.resume)
		p.resume = nil
	}
}

// Close stops listening, closes every connection on both sides and waits for the proxy's
// goroutines to exit. It may be called more than once.
func (p *Proxy) Close() {
	p.once.Do(func() {
		p.mu.Lock()
		p.closed = true
		for c := range p.conns {
			_ = c.Close()
		}
		p.mu.Unlock()
		close(p.done)
		_ = p.lis.Close()
	})
	p.wg.Wait()
}

// track registers c as open, or closes it and reports false if the proxy is closed.
func (p *Proxy) track(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		_ = c.Close()
		return false
	}
	p.conns[c] = struct{}{}
	return true
}

func (p *Proxy) untrack(c net.Conn) {
	p.mu.Lock()
	delete(p.conns, c)
	p.mu.Unlock()
	_ = c.Close()
}

func (p *Proxy) acceptLoop() {
	defer p.wg.Done()
	for {
		client, err := p.lis.Accept()
		if err != nil {
			if !errors.Is(err, net.ErrClosed) {
				p.tb.Errorf("testserver: proxy accept: %v", err)
			}
			return
		}
		p.accepted.Add(1)
		if !p.track(client) {
			return
		}
		p.wg.Add(1)
		go p.handle(client)
	}
}

// handle connects client to the target and copies both ways until either side ends or the
// proxy closes. A failed dial closes client, as a refused connection would end it.
func (p *Proxy) handle(client net.Conn) {
	defer p.wg.Done()
	server, err := net.DialTimeout("tcp", p.target, proxyDialTimeout)
	if err != nil {
		p.untrack(client)
		return
	}
	if !p.track(server) {
		p.untrack(client)
		return
	}
	var both sync.WaitGroup
	both.Add(2)
	pipe := func(dst, src net.Conn) {
		defer both.Done()
		p.copy(dst, src)
		// One direction ended: end the other too, as a peer's close would.
		p.untrack(dst)
		p.untrack(src)
	}
	go pipe(server, client)
	go pipe(client, server)
	both.Wait()
}

// copy forwards src to dst, holding each chunk read while the proxy is blackholed.
func (p *Proxy) copy(dst, src net.Conn) {
	buf := make([]byte, proxyBufferBytes)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			if !p.waitForwarding() {
				return
			}
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// waitForwarding waits while the proxy is blackholed; it reports false if the proxy closed.
func (p *Proxy) waitForwarding() bool {
	for {
		p.mu.Lock()
		resume, closed := p.resume, p.closed
		p.mu.Unlock()
		if closed {
			return false
		}
		if resume == nil {
			return true
		}
		select {
		case <-resume:
		case <-p.done:
			return false
		}
	}
}
