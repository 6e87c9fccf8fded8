package loop

import (
	"sync"
	"sync/atomic"
)

// waker tells the loop goroutine which reactors signalled Ready between ticks. With one
// reactor c is that reactor's Ready channel; with several, one helper goroutine per reactor
// forwards its signals: it sets the reactor's pending flag, then makes sure a value waits on
// c. A flag set after the loop's last look is always followed by a value on c, so no signal
// is lost. With TickOnly or no reactors, c is nil and never fires.
type waker struct {
	c       <-chan struct{}
	pending []atomic.Bool // fan-in only
	buf     []int         // take's result, reused

	quit     chan struct{}
	helpers  sync.WaitGroup
	stopOnce sync.Once
}

func startWaker(rs []Reactor, tickOnly bool) *waker {
	w := &waker{}
	switch {
	case tickOnly || len(rs) == 0:
	case len(rs) == 1:
		w.c = rs[0].Ready()
		w.buf = []int{0}
	default:
		notify := make(chan struct{}, 1)
		w.c = notify
		w.pending = make([]atomic.Bool, len(rs))
		w.buf = make([]int, 0, len(rs))
		w.quit = make(chan struct{})
		for i, r := range rs {
			ready := r.Ready()
			w.helpers.Go(func() { w.forward(i, ready, notify) })
		}
	}
	return w
}

// forward runs on a helper goroutine until stop.
func (w *waker) forward(i int, ready <-chan struct{}, notify chan<- struct{}) {
	for {
		select {
		case <-w.quit:
			return
		case <-ready:
			w.pending[i].Store(true)
			select {
			case notify <- struct{}{}:
			default: // a value already waits; the loop will see the flag
			}
		}
	}
}

// take returns the reactors to drain after a value arrived on c. The result is valid until the
// next call.
func (w *waker) take() []int {
	if w.pending == nil {
		return w.buf
	}
	w.buf = w.buf[:0]
	for i := range w.pending {
		if w.pending[i].Swap(false) {
			w.buf = append(w.buf, i)
		}
	}
	return w.buf
}

// takeAll returns the reactors whose forwarded signals are still pending; call it after stop.
func (w *waker) takeAll() []int {
	if w.pending == nil {
		return nil
	}
	return w.take()
}

// clear forgets a waiting signal of reactor i, just before the loop ticks it anyway. A signal
// sent after clear stays, so at worst the loop later wakes and finds nothing to deliver.
func (w *waker) clear(i int) {
	switch {
	case w.pending != nil:
		w.pending[i].Store(false)
	case w.c != nil:
		select {
		case <-w.c:
		default:
		}
	}
}

// stop makes the helper goroutines exit and waits for them. It is idempotent.
func (w *waker) stop() {
	w.stopOnce.Do(func() {
		if w.quit != nil {
			close(w.quit)
			w.helpers.Wait()
		}
	})
}
