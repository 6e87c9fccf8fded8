package reactor_test

import (
	"testing"

	"github.com/trixnew/prpc/calls"
	"github.com/trixnew/prpc/internal/testpb"
	"github.com/trixnew/prpc/reactor"
)

var (
	// watch and chat are the streams internal/testserver serves.
	watch = calls.MustStreamMethod[*testpb.WatchRequest, *testpb.EchoResponse]("/prpctest.TestService/Watch")
	chat  = calls.MustBidiMethod[*testpb.EchoRequest, *testpb.EchoResponse]("/prpctest.TestService/Chat")
)

// streamLog records what a stream's handler ran, on the Tick goroutine.
type streamLog struct {
	msgs   []string
	ends   int
	err    error
	endAt  int // len(msgs) when OnEnd ran
	onMsg  func(*testpb.EchoResponse)
	events *[]string // shared with other streams and calls, for interleaving; nil if unused
	name   string
	runs   [][]string // with a batch handler: each run OnMessages was given
}

func (l *streamLog) watchHandler() calls.StreamHandler[*testpb.WatchRequest, *testpb.EchoResponse] {
	return calls.StreamHandler[*testpb.WatchRequest, *testpb.EchoResponse]{OnMessage: l.message, OnEnd: l.end}
}

func (l *streamLog) chatHandler() calls.StreamHandler[*testpb.EchoRequest, *testpb.EchoResponse] {
	return calls.StreamHandler[*testpb.EchoRequest, *testpb.EchoResponse]{OnMessage: l.message, OnEnd: l.end}
}

// watchBatchHandler is watchHandler with OnMessages instead of OnMessage.
func (l *streamLog) watchBatchHandler() calls.StreamHandler[*testpb.WatchRequest, *testpb.EchoResponse] {
	return calls.StreamHandler[*testpb.WatchRequest, *testpb.EchoResponse]{OnMessages: l.messages, OnEnd: l.end}
}

// chatBatchHandler is chatHandler with OnMessages instead of OnMessage.
func (l *streamLog) chatBatchHandler() calls.StreamHandler[*testpb.EchoRequest, *testpb.EchoResponse] {
	return calls.StreamHandler[*testpb.EchoRequest, *testpb.EchoResponse]{OnMessages: l.messages, OnEnd: l.end}
}

// messages records a run, then each of its messages as message does.
func (l *streamLog) messages(ms []*testpb.EchoResponse) {
	run := make([]string, len(ms))
	for i, m := range ms {
		run[i] = m.GetMessage()
	}
	l.runs = append(l.runs, run)
	for _, m := range ms {
		l.message(m)
	}
}

func (l *streamLog) message(m *testpb.EchoResponse) {
	l.msgs = append(l.msgs, m.GetMessage())
	if l.events != nil {
		*l.events = append(*l.events, l.name+":"+m.GetMessage())
	}
	if l.onMsg != nil {
		l.onMsg(m)
	}
}

func (l *streamLog) end(err error) {
	l.ends++
	l.err = err
	l.endAt = len(l.msgs)
	if l.events != nil {
		*l.events = append(*l.events, l.name+":end")
	}
}

func (l *streamLog) ended() bool { return l.ends > 0 }

// checkEnd checks that the stream ended once, after its last message.
func (l *streamLog) checkEnd(t *testing.T) {
	t.Helper()
	if l.ends != 1 {
		t.Fatalf("OnEnd ran %d times, want 1", l.ends)
	}
	if l.endAt != len(l.msgs) {
		t.Fatalf("OnMessage ran after OnEnd: %d messages at the end, %d after", l.endAt, len(l.msgs))
	}
}

// seq returns prefix0 … prefix(n-1).
func seq(prefix string, from, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = prefix + itoa(from+i)
	}
	return out
}

func itoa(i int) string {
	if i == 0 {
		return "0"
	}
	var b []byte
	for ; i > 0; i /= 10 {
		b = append([]byte{byte('0' + i%10)}, b...)
	}
	return string(b)
}

// newStreamReactor is newReactor with long timeouts, for the streams' tests.
func newStreamReactor(t *testing.T, srvAddr string, cfg reactor.Config) *reactor.Reactor {
	t.Helper()
	cfg.Target = srvAddr
	return newReactor(t, nil, longTimeouts(cfg))
}
