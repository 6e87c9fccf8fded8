package calls

import (
	"context"
	"fmt"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/proto"

	"github.com/trixnew/prpc/internal/callcore"
)

// ErrStreamDone is returned by BidiStream.Send and BidiStream.CloseSend once the stream's
// side for sending is closed: after CloseSend, Cancel, or the stream's end. It is returned
// as is, not inside an *Error, and has code FailedPrecondition.
var ErrStreamDone error = &sentinel{codes.FailedPrecondition, "stream done: CloseSend, Cancel or its end came first"}

// StreamMethod describes one server-streaming gRPC method whose request type is Req and whose
// messages are of type Resp, both generated protobuf message pointer types: one request, then
// any number of messages. reactor.Watch opens its streams. A StreamMethod is immutable and
// safe for concurrent use; declare each one once and share it. It is a Descriptor, so that
// reactor.Config.Methods can allow it.
type StreamMethod[Req, Resp proto.Message] callcore.StreamMethod[Req, Resp]

// BidiMethod describes one bidirectional-streaming or client-streaming gRPC method whose
// client sends messages of type Req and receives messages of type Resp. reactor.Bidi opens its
// streams; a client-streaming method's one response is its stream's one message. A BidiMethod
// is immutable and safe for concurrent use; declare each one once and share it. It is a
// Descriptor, so that reactor.Config.Methods can allow it.
type BidiMethod[Req, Resp proto.Message] callcore.StreamMethod[Req, Resp]

// NewStreamMethod returns the descriptor of the server-streaming method at path, checked as
// NewMethod checks a unary one: the path's form, a concrete response type and, when the
// service is registered in protoregistry.GlobalFiles, that the method exists, is
// server-streaming (and not client-streaming), takes Req and returns a stream of Resp.
func NewStreamMethod[Req, Resp proto.Message](path string) (*StreamMethod[Req, Resp], error) {
	ops, err := streamOps[Req, Resp](path, kindServerStream)
	if err != nil {
		return nil, err
	}
	return (*StreamMethod[Req, Resp])(callcore.NewStreamMethod[Req, Resp](ops, false)), nil
}

// MustStreamMethod is like NewStreamMethod but panics with its error. It suits package-level
// declarations.
func MustStreamMethod[Req, Resp proto.Message](path string) *StreamMethod[Req, Resp] {
	m, err := NewStreamMethod[Req, Resp](path)
	if err != nil {
		panic(err)
	}
	return m
}

// NewBidiMethod returns the descriptor of the bidirectional-streaming or client-streaming
// method at path, checked as NewMethod checks a unary one: the path's form, a concrete
// response type and, when the service is registered in protoregistry.GlobalFiles, that the
// method exists, is client-streaming (bidirectional or not), takes a stream of Req and
// returns Resp.
func NewBidiMethod[Req, Resp proto.Message](path string) (*BidiMethod[Req, Resp], error) {
	ops, err := streamOps[Req, Resp](path, kindClientStream)
	if err != nil {
		return nil, err
	}
	return (*BidiMethod[Req, Resp])(callcore.NewStreamMethod[Req, Resp](ops, true)), nil
}

// MustBidiMethod is like NewBidiMethod but panics with its error. It suits package-level
// declarations.
func MustBidiMethod[Req, Resp proto.Message](path string) *BidiMethod[Req, Resp] {
	m, err := NewBidiMethod[Req, Resp](path)
	if err != nil {
		panic(err)
	}
	return m
}

// streamOps checks a stream method's path and types, of the given kind, and returns its
// operations.
func streamOps[Req, Resp proto.Message](path string, kind methodKind) (callcore.Ops, error) {
	if err := validatePath(path); err != nil {
		return callcore.Ops{}, err
	}
	var zero Resp
	if any(zero) == nil {
		return callcore.Ops{}, fmt.Errorf("prpc: method %s: response type must be a concrete generated message type, not an interface", path)
	}
	if err := checkRegisteredKind[Req, Resp](path, kind); err != nil {
		return callcore.Ops{}, err
	}
	respType := zero.ProtoReflect().Type()
	return callcore.Ops{Path: path, NewResponse: func() proto.Message { return respType.New().Interface() }}, nil
}

// Path returns the full method path, "/package.Service/Method".
func (m *StreamMethod[Req, Resp]) Path() string { return m.core().Ops().Path }

// String returns the method path.
func (m *StreamMethod[Req, Resp]) String() string { return m.Path() }

func (m *StreamMethod[Req, Resp]) descriptor() *callcore.Ops { return m.core().Ops() }

func (m *StreamMethod[Req, Resp]) core() *callcore.StreamMethod[Req, Resp] {
	return (*callcore.StreamMethod[Req, Resp])(m)
}

// Path returns the full method path, "/package.Service/Method".
func (m *BidiMethod[Req, Resp]) Path() string { return m.core().Ops().Path }

// String returns the method path.
func (m *BidiMethod[Req, Resp]) String() string { return m.Path() }

func (m *BidiMethod[Req, Resp]) descriptor() *callcore.Ops { return m.core().Ops() }

func (m *BidiMethod[Req, Resp]) core() *callcore.StreamMethod[Req, Resp] {
	return (*callcore.StreamMethod[Req, Resp])(m)
}

// StreamHandler is what a stream runs on the goroutine that calls the reactor's Tick (or
// Shutdown, Close), never on another goroutine: each message, then the end. A panic in either
// is isolated as a promise callback's is (reactor.Config.OnCallbackPanic).
type StreamHandler[Req, Resp proto.Message] struct {
	// OnMessage runs once for each message received, in the order received, under Tick's
	// budget, interleaved with the calls' callbacks in arrival order. The message is the
	// handler's from then on. Exactly one of OnMessage and OnMessages is required: a stream
	// opened with neither or both panics.
	OnMessage func(msg Resp)

	// OnMessages, instead of OnMessage, runs once for each run of messages that arrived one
	// after another, with no call's completion or other stream's message between them:
	// msgs holds one or more messages, in the order received, never more than
	// StreamOptions.MaxWaiting. Tick reads its clock once per run rather than once per
	// message, so a run costs the host less than its messages one by one; the budget counts
	// a run as one callback. The messages are the handler's; msgs itself is the stream's,
	// valid only until OnMessages returns, and reused for the next run. With KeepLatest
	// each run is the one newest message.
	OnMessages func(msgs []Resp)

	// OnEnd runs once, after the last message was delivered: with nil if the server ended
	// the stream with OK and every message was delivered, otherwise with a *Error that says
	// what ended it first (the server's status, ErrCancelled, ErrClosed, ErrTooLarge,
	// ErrOverloaded, ErrInvalidArgument; see reactor.Watch) and, through NotSent, whether
	// the stream certainly never reached a server. A Cancel, CloseStreams or Close that
	// discards messages after the server ended the stream OK makes the end its own error, so
	// that nil always means nothing was lost. It may be nil.
	OnEnd func(err error)

	// Resume, with StreamOptions.Resubscribe, returns the request of a reopening: it runs
	// once before each, after the attempt that ended has delivered its last message, given
	// the last message delivered (nil if none was yet), so that the new stream can start
	// after it (a resume token, a sequence number); a nil Resume reopens with the first
	// request. The stream owns what it returns, as Watch owns its request. A Resume that
	// panics (isolated as OnMessage is) or returns nil ends the stream with
	// ErrInvalidArgument instead. Not run for a stream cancelled or closed meanwhile.
	Resume func(last Resp) Req
}

// StreamOptions are per-stream options. A nil *StreamOptions means all defaults. The reactor
// reads it while the stream opens and keeps no reference to it, nor to its Metadata map,
// which it copies; it does keep Context and the CallOptions slice until the stream ends.
type StreamOptions struct {
	// Context, if not nil, is the parent of the stream's context: its values travel to the
	// transport (for interceptors and stats handlers), and its end cancels the stream,
	// which then ends with ErrCancelled (ErrTimeout if its deadline passed).
	Context context.Context

	// Metadata is sent as request headers, checked and copied as Options.Metadata is: a bad
	// key or value ends the stream with ErrInvalidArgument, metadata over MaxMetadataBytes
	// with ErrTooLarge, both at the next Tick and NotSent.
	Metadata metadata.MD

	// CallOptions are passed to gRPC for this stream, before prpc's own size limits, which
	// they cannot raise.
	CallOptions []grpc.CallOption

	// WaitForReady makes the stream wait, until it is cancelled, for the connection to
	// become ready instead of ending at once with Unavailable while the backend is
	// unreachable.
	WaitForReady bool

	// ResponseMetadata asks gRPC for the stream's response header (Stream.Header, from the
	// first message on) and trailer (Stream.Trailer, with the end, and Error.Trailer).
	ResponseMetadata bool

	// Timeout bounds the whole stream, reopenings and their backoffs included, from Watch or
	// Bidi on: once it has passed, the stream ends with ErrTimeout, after the messages
	// already waiting for Tick. It is kept on the reactor's clock (Config.Clock) and is not
	// sent to the server, which sees no deadline unless Context has one. 0 means none;
	// negative is refused (ErrInvalidArgument).
	Timeout time.Duration

	// MaxWaiting bounds the stream's messages received and waiting for Tick: once that many
	// wait, prpc stops reading the stream, so that HTTP/2's flow control holds the server's
	// sends back, until Tick has delivered some. Default 64; from 1 to 4096.
	MaxWaiting int

	// KeepLatest keeps only the newest message waiting for Tick, for a stream of states
	// where only the newest counts: prpc keeps reading at the server's pace, and a message
	// that arrives while another waits replaces it (delivered where the replaced one would
	// have been). MaxWaiting is then ignored.
	KeepLatest bool

	// MaxSendQueue bounds a BidiStream's messages accepted by Send and not yet handed to
	// gRPC: beyond it, Send fails with ErrOverloaded. Default 64; from 1 to 4096. Ignored by
	// reactor.Watch.
	MaxSendQueue int

	// Resubscribe, if not nil, reopens a server stream that the server or the connection
	// ended with one of its Codes, after a backoff, with the request StreamHandler.Resume
	// builds; the stream's OnEnd runs only once no reopening follows. Only reactor.Watch
	// takes it: reactor.Bidi refuses it (ErrInvalidArgument), since what the server kept of
	// the messages sent is known only to the game's protocol.
	Resubscribe *Resubscribe
}

// Resubscribe is a server stream's policy of reopening (StreamOptions.Resubscribe). A stream
// whose attempt ends with one of Codes, and that was not cancelled, closed or timed out, is
// opened again once StreamHandler.Resume has run and the backoff has passed: BaseDelay after
// an attempt that received a message, then ×Multiplier after each attempt in a row that
// received none, up to MaxDelay, each randomised by ±Jitter, as reactor.Backoff reconnects.
// The backoff is kept on the reactor's clock. Zero fields mean their defaults.
type Resubscribe struct {
	// Codes are the status codes that reopen the stream. Default [codes.Unavailable], what
	// a connection lost or a server going away (GOAWAY) ends a stream with. OK and
	// Canceled are refused: a stream that ended OK is over, and Canceled is the client's
	// own.
	Codes []codes.Code

	// BaseDelay is the wait before a reopening after an attempt that received a message.
	// Default 100 ms; at most 5 min.
	BaseDelay time.Duration

	// MaxDelay is the longest wait. Default 5 s, or BaseDelay if that is longer; at least
	// BaseDelay, at most 5 min.
	MaxDelay time.Duration

	// Multiplier is the growth of the wait after each attempt in a row that received no
	// message. Default 1.6; at least 1.
	Multiplier float64

	// Jitter randomises each wait by ±Jitter of it. Default 0.2; reactor.None (-1) means no
	// jitter, each wait exactly as computed; otherwise more than 0, at most 1.
	Jitter float64

	// MaxAttempts bounds the reopenings in a row that receive no message: once that many
	// have, the stream ends with the last attempt's error. 0 means no bound.
	MaxAttempts int
}

// Bounds and defaults of StreamOptions' fields.
const (
	DefaultMaxWaiting   = 64
	MaxMaxWaiting       = 4096
	DefaultMaxSendQueue = 64
	MaxMaxSendQueue     = 4096
)

// Stream is the handle of a server stream opened by reactor.Watch. Its methods are safe from
// any goroutine.
type Stream[Req, Resp proto.Message] callcore.Stream[Req, Resp]

func (s *Stream[Req, Resp]) core() *callcore.Stream[Req, Resp] {
	return (*callcore.Stream[Req, Resp])(s)
}

// Cancel ends the stream with ErrCancelled, unless its end is decided already; OnEnd runs at
// a later Tick. Once Cancel has returned on the Tick goroutine (called from another
// goroutine: from the next Tick on), no message of the stream is delivered. It never blocks
// and may be called more than once.
func (s *Stream[Req, Resp]) Cancel() { s.core().Owner().Cancel() }

// Method returns the stream's method path.
func (s *Stream[Req, Resp]) Method() string { return s.core().Path() }

// Header returns the response header the server sent, from the first message on, if the
// stream asked for it (StreamOptions.ResponseMetadata); nil otherwise, or before.
func (s *Stream[Req, Resp]) Header() metadata.MD { return s.core().Owner().Header() }

// Trailer returns the response trailer the server sent with its end, once ended, if the
// stream asked for it (StreamOptions.ResponseMetadata); nil otherwise, or before.
func (s *Stream[Req, Resp]) Trailer() metadata.MD { return s.core().Owner().Trailer() }

// BidiStream is the handle of a bidirectional or client-streaming stream opened by
// reactor.Bidi: a Stream that also sends. Its methods are safe from any goroutine.
type BidiStream[Req, Resp proto.Message] callcore.Stream[Req, Resp]

func (s *BidiStream[Req, Resp]) core() *callcore.Stream[Req, Resp] {
	return (*callcore.Stream[Req, Resp])(s)
}

// Cancel is Stream.Cancel; it also closes the stream's side for sending (ErrStreamDone).
func (s *BidiStream[Req, Resp]) Cancel() { s.core().Owner().Cancel() }

// Method returns the stream's method path.
func (s *BidiStream[Req, Resp]) Method() string { return s.core().Path() }

// Header is Stream.Header.
func (s *BidiStream[Req, Resp]) Header() metadata.MD { return s.core().Owner().Header() }

// Trailer is Stream.Trailer.
func (s *BidiStream[Req, Resp]) Trailer() metadata.MD { return s.core().Owner().Trailer() }

// Send queues msg for the stream's sending goroutine, which encodes it and hands it to gRPC
// in the order sent, and returns nil; the stream owns msg from then on, as grpc-go's SendMsg
// does. It never blocks: with MaxSendQueue messages waiting it fails at once with an
// *Error matching ErrOverloaded that names the bound, and after CloseSend, Cancel or the
// stream's end with ErrStreamDone. A message that does not encode ends the stream with
// ErrInvalidArgument (ErrTooLarge over MaxRequestBytes). A nil msg panics.
func (s *BidiStream[Req, Resp]) Send(msg Req) error {
	if any(msg) == nil || !msg.ProtoReflect().IsValid() {
		panic("prpc: BidiStream.Send with a nil message")
	}
	return s.core().Owner().Send(msg)
}

// CloseSend closes the client's side of the stream once the messages queued before it are
// handed to gRPC, and returns nil; then ErrStreamDone, as Send. It never blocks.
func (s *BidiStream[Req, Resp]) CloseSend() error { return s.core().Owner().CloseSend() }

// Unsent returns, once OnEnd has begun, the messages Send accepted that gRPC never took (it
// refused them, or the stream ended first), in the order sent, to send again on a new stream;
// nil before, and when every message was handed over. Each accepted message is handed to
// gRPC or listed here, never both.
func (s *BidiStream[Req, Resp]) Unsent() []Req { return s.core().Unsent() }
