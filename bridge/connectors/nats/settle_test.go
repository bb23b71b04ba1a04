package nats

import (
	"bytes"
	"context"
	"errors"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// cutProxy forwards TCP connections to a server. While held it passes
// nothing on and drops what the client sends, as a network gone silent;
// cut closes the connections it has, as a server node that died, and lets
// new ones through again.
type cutProxy struct {
	addr    string
	mu      sync.Mutex
	held    bool
	dropped bytes.Buffer // client bytes dropped while held
	conns   []net.Conn
}

func startCutProxy(t *testing.T, server string) *cutProxy {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	p := &cutProxy{addr: l.Addr().String()}
	t.Cleanup(func() { _ = l.Close(); p.cut() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			s, err := net.Dial("tcp", server)
			if err != nil {
				_ = c.Close()
				continue
			}
			p.mu.Lock()
			p.conns = append(p.conns, c, s)
			p.mu.Unlock()
			go p.pipe(s, c, true)
			go p.pipe(c, s, false)
		}
	}()
	return p
}

// pipe copies from src to dst, dropping while held (and keeping what a
// client sent then, to show it never arrived).
func (p *cutProxy) pipe(dst, src net.Conn, fromClient bool) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			p.mu.Lock()
			held := p.held
			if held && fromClient {
				p.dropped.Write(buf[:n])
			}
			p.mu.Unlock()
			if !held {
				if _, werr := dst.Write(buf[:n]); werr != nil {
					return
				}
			}
		}
		if err != nil {
			_ = dst.Close()
			return
		}
	}
}

func (p *cutProxy) hold() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.held = true
}

func (p *cutProxy) droppedHas(s string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return bytes.Contains(p.dropped.Bytes(), []byte(s))
}

func (p *cutProxy) cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.conns {
		_ = c.Close()
	}
	p.conns, p.held = nil, false
}

// TestAnswersLostWithTheConnectionAreSentAgain: the connection drops while
// the source flushes its acknowledgements, so they never reach the server
// (the node it was connected to died). Settling does not fail the route:
// the source reconnects and sends them again, and JetStream has them.
func TestAnswersLostWithTheConnectionAreSentAgain(t *testing.T) {
	js := needServer(t)
	stream, subject := newStream(t, js)
	tg := openTarget(t, "subject="+subject+".x")
	require.NoError(t, tg.WriteBatch(context.Background(), msgs("a1", "a2", "a3")))

	proxy := startCutProxy(t, testServer())
	durable := unique("mqb-test-")
	s, err := NewSource(resolve(t, "nats://"+proxy.addr+"?subject="+subject+".>&stream="+stream+"&durable="+durable))
	require.NoError(t, err)
	require.NoError(t, s.Connect(context.Background()))
	t.Cleanup(func() { _ = s.Close(context.Background()) })
	_, acks := read(t, s, 3)

	proxy.hold()
	settled := make(chan error, 1)
	go func() {
		var errs []error
		for _, ack := range acks {
			errs = append(errs, ack(context.Background(), nil))
		}
		settled <- errors.Join(errs...)
	}()
	require.Eventually(t, func() bool { return proxy.droppedHas("+ACK") && proxy.droppedHas("PING") },
		5*time.Second, 5*time.Millisecond, "the acknowledgements and the flush's PING were sent")
	proxy.cut()
	select {
	case err := <-settled:
		require.NoError(t, err)
	case <-time.After(30 * time.Second):
		t.Fatal("settling did not return after the client reconnected")
	}

	cons, err := js.Consumer(context.Background(), stream, durable)
	require.NoError(t, err)
	info, err := cons.Info(context.Background())
	require.NoError(t, err)
	assert.Zero(t, info.NumAckPending, "the server holds every acknowledgement")
	assert.Equal(t, uint64(3), info.AckFloor.Stream)
}
