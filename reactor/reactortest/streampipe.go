package reactortest

import (
	"errors"
	"io"
	"sync"
)

// DefaultStreamWindow is how many bytes of encoded messages each direction of a Backend's
// stream holds unread, unless SetStreamWindow says otherwise: HTTP/2's initial window,
// 65,535 bytes, which grpc-go starts each stream with.
const DefaultStreamWindow = 65535

// errPipeDone is what pipe.put and pipe.get return when their done channel closes first.
var errPipeDone = errors.New("reactortest: the waiter's context is done")

// errPipeBroken is what pipe.put returns once the reader has gone or the writer closed.
var errPipeBroken = errors.New("reactortest: the stream has ended")

// pipe is one direction of a stream: encoded messages in order, bounded as HTTP/2 flow
// control bounds a stream's window. Each message counts its length plus gRPC's 5-byte
// prefix, as it counts in a window; a message is accepted while the messages not yet read
// leave room for it, or when none waits, so that a message larger than the window still
// passes alone. One goroutine writes and one reads at a time; both may wait.
type pipe struct {
	window  int
	onStall func() // run once for each put that has to wait for room; nil: none

	mu      sync.Mutex
	msgs    [][]byte
	bytes   int           // of msgs, with their prefixes
	closed  bool          // the writer sends no more: get returns io.EOF once msgs are read
	broken  bool          // the reader has gone: put fails, msgs are dropped
	changed chan struct{} // closed, and replaced, at every change of the fields above
}

func newPipe(window int, onStall func()) *pipe {
	return &pipe{window: window, onStall: onStall, changed: make(chan struct{})}
}

// put appends msg once there is room for it, and returns nil; or errPipeDone once done is
// closed, which it checks before it appends; or errPipeBroken once the pipe is closed or
// broken.
func (p *pipe) put(done <-chan struct{}, msg []byte) error {
	size := len(msg) + messageHeader
	stalled := false
	for {
		p.mu.Lock()
		select {
		case <-done:
			p.mu.Unlock()
			return errPipeDone
		default:
		}
		if p.closed || p.broken {
			p.mu.Unlock()
			return errPipeBroken
		}
		if p.bytes == 0 || p.bytes+size <= p.window {
			p.msgs = append(p.msgs, msg)
			p.bytes += size
			p.notifyLocked()
			p.mu.Unlock()
			return nil
		}
		changed := p.changed // taken under the mutex: no change after it goes unseen
		p.mu.Unlock()
		if !stalled && p.onStall != nil {
			stalled = true
			p.onStall()
		}
		select {
		case <-changed:
		case <-done:
			return errPipeDone
		}
	}
}

// get returns the first message not read yet, once there is one; io.EOF once the pipe is
// closed and every message has been read; errPipeDone if done is closed first. A message
// waiting is returned even if done is closed.
func (p *pipe) get(done <-chan struct{}) ([]byte, error) {
	for {
		p.mu.Lock()
		if len(p.msgs) > 0 {
			msg := p.msgs[0]
			p.msgs[0] = nil
			p.msgs = p.msgs[1:]
			p.bytes -= len(msg) + messageHeader
			p.notifyLocked()
			p.mu.Unlock()
			return msg, nil
		}
		if p.closed || p.broken {
			p.mu.Unlock()
			return nil, io.EOF
		}
		changed := p.changed
		p.mu.Unlock()
		select {
		case <-changed:
		case <-done:
			return nil, errPipeDone
		}
	}
}

// close says that the writer sends no more messages.
func (p *pipe) close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.closed {
		p.closed = true
		p.notifyLocked()
	}
}

// breakOff says that the reader has gone: the messages waiting are dropped, and put fails.
func (p *pipe) breakOff() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.broken {
		p.broken = true
		p.msgs, p.bytes = nil, 0
		p.notifyLocked()
	}
}

// notifyLocked wakes every waiter; with mu held.
func (p *pipe) notifyLocked() {
	close(p.changed)
	p.changed = make(chan struct{})
}
