package crashtest

import (
	"errors"
	"io"
	"net"
	"sync"
	"testing"
)

// proxy stands between one host and PostgreSQL: a TCP listener on
// loopback that forwards each connection to the server's Unix socket.
// pause cuts the host off (every live connection closed, new ones
// closed as soon as they come); resume lets it back.
type proxy struct {
	ln     net.Listener
	target string

	mu     sync.Mutex
	paused bool
	conns  map[net.Conn]bool
	wg     sync.WaitGroup
}

func newProxy(t *testing.T, socket string) *proxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &proxy{ln: ln, target: socket, conns: map[net.Conn]bool{}}
	p.wg.Add(1)
	go p.accept()
	t.Cleanup(p.close)
	return p
}

func (p *proxy) addr() string { return p.ln.Addr().String() }

func (p *proxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			continue
		}
		p.mu.Lock()
		paused := p.paused
		if !paused {
			p.conns[c] = true
		}
		p.mu.Unlock()
		if paused {
			c.Close()
			continue
		}
		p.wg.Add(1)
		go p.forward(c)
	}
}

func (p *proxy) forward(c net.Conn) {
	defer p.wg.Done()
	s, err := net.Dial("unix", p.target)
	p.mu.Lock()
	if err != nil || p.paused {
		p.mu.Unlock()
		c.Close()
		if s != nil {
			s.Close()
		}
		return
	}
	p.conns[s] = true
	p.mu.Unlock()
	done := make(chan struct{}, 2)
	go func() { io.Copy(s, c); done <- struct{}{} }()
	go func() { io.Copy(c, s); done <- struct{}{} }()
	<-done
	c.Close()
	s.Close()
	<-done
	p.mu.Lock()
	delete(p.conns, c)
	delete(p.conns, s)
	p.mu.Unlock()
}

// pause closes every live connection and refuses new ones.
func (p *proxy) pause() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.paused = true
	for c := range p.conns {
		c.Close()
	}
}

func (p *proxy) resume() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.paused = false
}

func (p *proxy) close() {
	p.ln.Close()
	p.pause()
	p.wg.Wait()
}
