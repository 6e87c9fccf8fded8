package loop_test

import (
	"context"
	"fmt"
	"time"

	"github.com/trixnew/prpc/loop"
	"github.com/trixnew/prpc/reactor"
)

// mailbox stands in for a *reactor.Reactor: Post queues a callback, as a completed call
// would, and Tick runs the queued callbacks on the loop goroutine.
type mailbox struct {
	queue []func()
	ready chan struct{}
}

func (m *mailbox) Post(f func()) {
	m.queue = append(m.queue, f)
	select {
	case m.ready <- struct{}{}:
	default:
	}
}

func (m *mailbox) Tick(time.Duration) reactor.TickReport {
	q := m.queue
	m.queue = nil
	for _, f := range q {
		f()
	}
	return reactor.TickReport{Delivered: len(q)}
}

func (m *mailbox) Ready() <-chan struct{} { return m.ready }

func (m *mailbox) Close(context.Context) error {
	m.Tick(0)
	fmt.Println("closed")
	return nil
}

func Example() {
	mb := &mailbox{ready: make(chan struct{}, 1)}
	ctx, cancel := context.WithCancel(context.Background())
	l, err := loop.New(loop.Config{
		TPS:      100,
		Reactors: []loop.Reactor{mb},
		OnTick: func(tick uint64) {
			fmt.Println("tick", tick)
			mb.Post(func() { fmt.Println("  reply to tick", tick) })
			if tick == 2 {
				cancel()
			}
		},
		OnStop: func() {
			fmt.Println("stopping")
			mb.Post(func() { fmt.Println("  final save acknowledged") })
		},
	})
	if err != nil {
		panic(err)
	}
	if err := l.Run(ctx); err != nil {
		panic(err)
	}
	st := l.Stats()
	fmt.Println("ticks:", st.Ticks, "delivered:", st.Delivered)
	// Output:
	// tick 0
	//   reply to tick 0
	// tick 1
	//   reply to tick 1
	// tick 2
	//   reply to tick 2
	// stopping
	//   final save acknowledged
	// closed
	// ticks: 3 delivered: 3
}
