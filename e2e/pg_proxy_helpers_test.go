package e2e

// A TCP proxy in front of PostgreSQL that understands the protocol's
// message framing just enough to lose the reply to one COMMIT: the server
// receives and runs it, the client never learns how it ended (its
// connection closes). That is the one failure a connection kill cannot
// make on purpose: a COMMIT that went through while its client saw an
// error. The proxy also starts closed, so that a DSN can name a port where
// nothing listens yet.

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// pgProxy forwards connections from its address to a PostgreSQL server.
type pgProxy struct {
	t      *testing.T
	addr   string // where it listens once open
	target string // host:port of the server

	mu     sync.Mutex
	ln     net.Listener
	closed bool
	conns  map[net.Conn]bool
	armed  bool        // lose the reply to the next COMMIT
	lost   chan string // the command tag of each reply lost ("COMMIT", "ROLLBACK")
	wg     sync.WaitGroup
}

// newPGProxy makes a proxy to the server of dsn, closed (open starts it),
// and returns it with dsn pointed at it. It is closed, with every
// connection through it, when the test ends.
func newPGProxy(t *testing.T, dsn string) (*pgProxy, string) {
	t.Helper()
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		t.Fatalf("proxy: bad DSN: %v", err)
	}
	u, err := url.Parse(dsn)
	if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
		t.Fatalf("proxy: want a postgres:// URL DSN, got %s", pgDescribe(dsn))
	}
	x := &pgProxy{
		t:      t,
		addr:   freeAddr(t),
		target: net.JoinHostPort(cfg.Host, fmt.Sprint(cfg.Port)),
		conns:  map[net.Conn]bool{},
		lost:   make(chan string, 16),
	}
	u.Host = x.addr
	t.Cleanup(x.close)
	return x, u.String()
}

// open starts listening on the proxy's address (reserved a moment ago when
// it was made; the test fails if another process took it meanwhile).
func (x *pgProxy) open() {
	x.t.Helper()
	ln, err := net.Listen("tcp", x.addr)
	if err != nil {
		x.t.Fatalf("proxy: listen on %s: %v", x.addr, err)
	}
	x.mu.Lock()
	x.ln = ln
	x.mu.Unlock()
	x.wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			x.wg.Go(func() { x.serve(c) })
		}
	})
	x.t.Logf("proxy: listening on %s, forwarding to %s", x.addr, x.target)
}

// loseNextCommitReply makes the proxy forward the next COMMIT to the
// server and drop its reply, then close that connection on both sides.
func (x *pgProxy) loseNextCommitReply() {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.armed = true
}

// waitLost waits until a reply was lost and returns its command tag.
func (x *pgProxy) waitLost(timeout time.Duration) (string, bool) {
	select {
	case tag := <-x.lost:
		return tag, true
	case <-time.After(timeout):
		return "", false
	}
}

func (x *pgProxy) close() {
	x.mu.Lock()
	x.closed = true
	if x.ln != nil {
		x.ln.Close()
	}
	for c := range x.conns {
		c.Close()
	}
	x.mu.Unlock()
	x.wg.Wait()
}

func (x *pgProxy) track(cs ...net.Conn) bool {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.closed {
		return false
	}
	for _, c := range cs {
		x.conns[c] = true
	}
	return true
}

func (x *pgProxy) untrack(cs ...net.Conn) {
	x.mu.Lock()
	defer x.mu.Unlock()
	for _, c := range cs {
		c.Close()
		delete(x.conns, c)
	}
}

// takeArmed reports whether msg (a Query or Parse message) is a COMMIT
// whose reply is to be lost, and disarms the proxy if so.
func (x *pgProxy) takeArmed(typ byte, msg []byte) bool {
	body := msg[5:]
	if typ == 'P' { // Parse: statement name, then the query
		_, body, _ = bytes.Cut(body, []byte{0})
	}
	query, _, _ := bytes.Cut(body, []byte{0})
	if !strings.EqualFold(strings.TrimSpace(string(query)), "COMMIT") {
		return false
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	if !x.armed {
		return false
	}
	x.armed = false
	return true
}

// Protocol codes of the startup packets that ask for encryption.
const (
	pgSSLRequest    = 80877103
	pgGSSENCRequest = 80877104
)

func (x *pgProxy) serve(client net.Conn) {
	server, err := net.DialTimeout("tcp", x.target, 10*time.Second)
	if err != nil {
		client.Close()
		return
	}
	if !x.track(client, server) {
		client.Close()
		server.Close()
		return
	}
	defer x.untrack(client, server)
	// Startup: untyped packets; a request for encryption is answered with
	// one byte (the tests' DSNs say sslmode=disable: the answer is 'N').
	for {
		pkt, err := readUntyped(client)
		if err != nil {
			return
		}
		if _, err := server.Write(pkt); err != nil {
			return
		}
		if code := binary.BigEndian.Uint32(pkt[4:8]); code != pgSSLRequest && code != pgGSSENCRequest {
			break
		}
		var b [1]byte
		if _, err := io.ReadFull(server, b[:]); err != nil || b[0] != 'N' {
			return // an encrypted session cannot be proxied
		}
		if _, err := client.Write(b[:]); err != nil {
			return
		}
	}
	var losing atomic.Bool
	done := make(chan struct{})
	go func() { // server -> client
		defer close(done)
		tag := ""
		for {
			typ, msg, err := readTyped(server)
			if err != nil {
				return
			}
			if !losing.Load() {
				if _, err := client.Write(msg); err != nil {
					return
				}
				continue
			}
			switch typ {
			case 'C': // CommandComplete: the tag says whether it committed
				tag = string(bytes.TrimRight(msg[5:], "\x00"))
			case 'E':
				tag = "error"
			case 'Z': // ReadyForQuery: the server is done with the COMMIT
				x.lost <- tag
				client.Close()
				server.Close()
				return
			}
		}
	}()
	for { // client -> server
		typ, msg, err := readTyped(client)
		if err != nil {
			break
		}
		if (typ == 'Q' || typ == 'P') && x.takeArmed(typ, msg) {
			losing.Store(true) // before the server can see it
		}
		if _, err := server.Write(msg); err != nil {
			break
		}
	}
	client.Close()
	server.Close()
	<-done
}

// readUntyped reads a startup packet: a length (counting itself) and body.
func readUntyped(r io.Reader) ([]byte, error) {
	var hdr [4]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return nil, err
	}
	n := binary.BigEndian.Uint32(hdr[:])
	if n < 8 || n > 1<<20 {
		return nil, fmt.Errorf("startup packet of %d bytes", n)
	}
	pkt := make([]byte, n)
	copy(pkt, hdr[:])
	_, err := io.ReadFull(r, pkt[4:])
	return pkt, err
}

// readTyped reads a message: a type byte, a length (counting itself, not
// the type) and body. It returns the whole message, ready to forward.
func readTyped(r io.Reader) (byte, []byte, error) {
	var hdr [5]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return 0, nil, err
	}
	n := binary.BigEndian.Uint32(hdr[1:])
	if n < 4 || n > 1<<30 {
		return 0, nil, fmt.Errorf("message %q of %d bytes", hdr[0], n)
	}
	msg := make([]byte, 1+n)
	copy(msg, hdr[:])
	_, err := io.ReadFull(r, msg[5:])
	return hdr[0], msg, err
}
