package reactor_test

import (
	"encoding/binary"
	"errors"
	"io"
	"net"
	"net/http"
	"sync/atomic"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/trixnew/prpc/internal/testpb"
)

// h2Server is a misbehaving gRPC backend built on net/http's HTTP/2 server, which, unlike
// grpc-go's, sends response headers and trailers of any size whatever the client advertises
// (SETTINGS_MAX_HEADER_LIST_SIZE). It speaks just enough of gRPC's unary framing, over
// unencrypted HTTP/2, to answer prpctest.TestService/Echo: a request whose Message is
// h2Bad is answered by the bad function; every other request counts as good, waits until
// release is closed (or its stream ends), and is echoed.
type h2Server struct {
	addr    string
	srv     *http.Server
	done    chan struct{} // closed when Serve returns
	release chan struct{}
	bad     func(w http.ResponseWriter)

	good  atomic.Int64 // good calls received
	conns atomic.Int64 // connections accepted
}

// h2Bad is the Message of the request the server answers with its bad function.
const h2Bad = "bad"

// newH2Server starts a h2Server on 127.0.0.1 with an ephemeral port that answers
// the bad request with bad, and closes it when the test ends.
func newH2Server(t *testing.T, bad func(w http.ResponseWriter)) *h2Server {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("h2Server: listen: %v", err)
	}
	s := &h2Server{addr: lis.Addr().String(), done: make(chan struct{}), release: make(chan struct{}), bad: bad}
	var protocols http.Protocols
	protocols.SetUnencryptedHTTP2(true) // prior knowledge, as gRPC's plaintext client speaks it
	s.srv = &http.Server{
		Handler:   s,
		Protocols: &protocols,
		// Far more streams than the test keeps open; net/http's default is lower than some.
		HTTP2: &http.HTTP2Config{MaxConcurrentStreams: 1000},
		ConnState: func(_ net.Conn, st http.ConnState) {
			if st == http.StateNew {
				s.conns.Add(1)
			}
		},
	}
	go func() {
		defer close(s.done)
		if err := s.srv.Serve(lis); !errors.Is(err, http.ErrServerClosed) {
			t.Errorf("h2Server: serve: %v", err)
		}
	}()
	t.Cleanup(func() {
		s.releaseGood()
		_ = s.srv.Close()
		<-s.done
	})
	return s
}

// releaseGood lets every held good call answer. It may be called more than once.
func (s *h2Server) releaseGood() {
	select {
	case <-s.release:
	default:
		close(s.release)
	}
}

// ServeHTTP reads one length-prefixed, uncompressed EchoRequest and answers it.
func (s *h2Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil || len(body) < 5 || body[0] != 0 || int(binary.BigEndian.Uint32(body[1:5])) != len(body)-5 {
		http.Error(w, "h2Server: not one uncompressed gRPC message", http.StatusBadRequest)
		return
	}
	req := &testpb.EchoRequest{}
	if err := proto.Unmarshal(body[5:], req); err != nil {
		http.Error(w, "h2Server: not an EchoRequest", http.StatusBadRequest)
		return
	}
	if req.GetMessage() == h2Bad {
		s.bad(w)
		return
	}
	s.good.Add(1)
	select {
	case <-s.release:
	case <-r.Context().Done():
		return
	}
	h2Reply(w, nil, &testpb.EchoResponse{Message: req.GetMessage()}, map[string]string{"grpc-status": "0"})
}

// h2Reply writes a gRPC response: the header block (content-type and header), then msg
// as one length-prefixed message if it is not nil, then the trailer block.
func h2Reply(w http.ResponseWriter, header map[string]string, msg proto.Message, trailer map[string]string) {
	for k, v := range header {
		w.Header()[k] = []string{v} // as is: net/http's HTTP/2 server lowercases names itself
	}
	w.Header().Set("Content-Type", "application/grpc")
	w.WriteHeader(http.StatusOK)
	if msg != nil {
		b, err := proto.Marshal(msg)
		if err != nil {
			panic(err)
		}
		frame := make([]byte, 5, 5+len(b))
		binary.BigEndian.PutUint32(frame[1:], uint32(len(b)))
		_, _ = w.Write(append(frame, b...))
	}
	_ = http.NewResponseController(w).Flush() // the header block goes out on its own
	for k, v := range trailer {
		w.Header()[http.TrailerPrefix+k] = []string{v}
	}
}
