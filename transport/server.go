package transport

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/dplearn/dplearn/certs"
	"github.com/dplearn/dplearn/transport/transportpb"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/keepalive"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"
)

// Header keys of the Receive response (see transport.proto).
const (
	headerLastAccepted = "dplearn-last-accepted"
	headerMaxPayload   = "dplearn-max-payload"
)

// errorDomain marks the ErrorInfo detail of a refusal's gRPC status.
const errorDomain = "dplearn.transport"

// Keepalive defaults. gRPC clients may not ping more often than every 10 s;
// the hub pings idle parties itself, so a dead party is noticed within
// ServerKeepalive.Time + Timeout.
const (
	DefaultServerKeepaliveTime    = 5 * time.Second
	DefaultServerKeepaliveTimeout = 5 * time.Second
	DefaultClientKeepaliveTime    = 10 * time.Second
	DefaultClientKeepaliveTimeout = 5 * time.Second
	// minClientPing is the enforcement policy: a client pinging more often
	// is disconnected.
	minClientPing = 5 * time.Second
)

// ServerConfig configures a gRPC hub (Listen).
type ServerConfig struct {
	HubConfig
	// Address to listen on, e.g. "0.0.0.0:7000", or "127.0.0.1:0" for a
	// free loopback port. Ignored if Listener is set.
	Address string
	// Listener, if set, is served instead of listening on Address.
	Listener net.Listener
	// Identity is the hub's certificate (certs.LoadParty). Required unless
	// Insecure; its name is the hub's name.
	Identity *certs.Party
	// Insecure serves plaintext without authentication, on a loopback
	// address only, for local tests. Party names are then claimed, not
	// proven.
	Insecure bool
	// KeepaliveTime is how long a connection may be idle before the hub
	// pings it (at least 1 s; default 5 s), and KeepaliveTimeout how long
	// the hub waits for the answer before it closes the connection (default
	// 5 s).
	KeepaliveTime, KeepaliveTimeout time.Duration
	// MaxConnsPerParty caps the connections open at once under one party
	// name (from its certificate): one more is closed right after the TLS
	// handshake, with a (rate-limited) log line. MaxCallsPerParty caps the
	// calls in progress at once from one party over all its connections:
	// one more is refused (ReasonTooMany, gRPC ResourceExhausted). Each
	// connection also carries at most 8 calls (gRPC's stream limit).
	// Defaults DefaultMaxConnsPerParty and DefaultMaxCallsPerParty (4
	// each); in Insecure mode, where names are only claimed, only the
	// per-connection limit applies.
	MaxConnsPerParty, MaxCallsPerParty int
	// MaxHandshakes caps the connections accepted and not yet through their
	// TLS handshake: the hub accepts no more until one finishes, and the
	// rest wait in the kernel's queue, costing the hub no descriptor. With
	// the caps above, the hub's connections are bounded by MaxHandshakes +
	// MaxConnsPerParty × (len(Roster) + 1): names from the CA that are not
	// in the roster share one cap. Default DefaultMaxHandshakes (32).
	MaxHandshakes int
}

// Server is a Hub served over gRPC with mutual TLS 1.3.
type Server struct {
	*hub
	gs        *grpc.Server
	lis       net.Listener
	insecure  bool
	closeOnce sync.Once
	served    chan struct{}
}

// Listen starts a hub: it listens, serves the Relay service in the
// background and returns. The hub stops when ctx is done or Close is
// called.
func Listen(ctx context.Context, cfg ServerConfig) (*Server, error) {
	if cfg.Insecure == (cfg.Identity != nil) {
		if cfg.Insecure {
			return nil, errors.New("transport: Insecure with an Identity: choose one")
		}
		return nil, errors.New("transport: no Identity (certificate) for the hub; Insecure is for local tests only")
	}
	if cfg.Identity != nil {
		if cfg.Name != "" && cfg.Name != cfg.Identity.Name {
			return nil, fmt.Errorf("transport: hub name %q differs from its certificate's %q", cfg.Name, cfg.Identity.Name)
		}
		cfg.Name = cfg.Identity.Name
	}
	h, err := newHub(cfg.HubConfig)
	if err != nil {
		return nil, err
	}
	if cfg.KeepaliveTime == 0 {
		cfg.KeepaliveTime = DefaultServerKeepaliveTime
	}
	if cfg.KeepaliveTimeout == 0 {
		cfg.KeepaliveTimeout = DefaultServerKeepaliveTimeout
	}
	if cfg.MaxConnsPerParty == 0 {
		cfg.MaxConnsPerParty = DefaultMaxConnsPerParty
	}
	if cfg.MaxCallsPerParty == 0 {
		cfg.MaxCallsPerParty = DefaultMaxCallsPerParty
	}
	if cfg.MaxHandshakes == 0 {
		cfg.MaxHandshakes = DefaultMaxHandshakes
	}
	if cfg.MaxConnsPerParty < 0 || cfg.MaxCallsPerParty < 0 || cfg.MaxHandshakes < 0 {
		return nil, fmt.Errorf("transport: negative MaxConnsPerParty %d, MaxCallsPerParty %d or MaxHandshakes %d", cfg.MaxConnsPerParty, cfg.MaxCallsPerParty, cfg.MaxHandshakes)
	}
	if cfg.KeepaliveTime < time.Second || cfg.KeepaliveTimeout < 0 {
		return nil, fmt.Errorf("transport: keepalive time %v (at least 1 s) or timeout %v invalid", cfg.KeepaliveTime, cfg.KeepaliveTimeout)
	}
	lis := cfg.Listener
	if lis == nil {
		if cfg.Insecure {
			if err := requireLoopback(cfg.Address); err != nil {
				return nil, err
			}
		}
		var lc net.ListenConfig
		if lis, err = lc.Listen(ctx, "tcp", cfg.Address); err != nil {
			return nil, fmt.Errorf("transport: listen: %w", err)
		}
	}
	if cfg.Insecure {
		if err := requireLoopback(lis.Addr().String()); err != nil {
			lis.Close()
			return nil, err
		}
		h.log.Warn("transport: INSECURE hub: plaintext, no certificates, party names are claimed not proven; for local tests only", "address", lis.Addr().String())
	}
	pl := &partyLimits{maxConns: cfg.MaxConnsPerParty, maxCalls: cfg.MaxCallsPerParty, conns: map[string]int{}, calls: map[string]int{}, roster: h.parties}
	var creds credentials.TransportCredentials
	if cfg.Insecure {
		creds = insecureCreds()
	} else {
		hl := newHandshakeLimiter(lis, cfg.MaxHandshakes)
		lis = hl
		creds = loggingCreds{TransportCredentials: credentials.NewTLS(cfg.Identity.ServerTLS()), h: h, limits: pl, handshakes: hl}
	}
	limit := h.cfg.MaxPayload + envelopeOverhead
	gs := grpc.NewServer(
		grpc.Creds(creds),
		grpc.MaxRecvMsgSize(limit),
		grpc.MaxSendMsgSize(limit),
		grpc.MaxConcurrentStreams(maxStreamsPerConn),
		grpc.ChainUnaryInterceptor(func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
			release, err := pl.call(ctx, h, cfg.Insecure)
			if err != nil {
				return nil, err
			}
			defer release()
			return handler(ctx, req)
		}),
		grpc.ChainStreamInterceptor(func(srv any, ss grpc.ServerStream, _ *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
			release, err := pl.call(ss.Context(), h, cfg.Insecure)
			if err != nil {
				return err
			}
			defer release()
			return handler(srv, ss)
		}),
		grpc.ConnectionTimeout(10*time.Second),
		grpc.KeepaliveParams(keepalive.ServerParameters{Time: cfg.KeepaliveTime, Timeout: cfg.KeepaliveTimeout}),
		grpc.KeepaliveEnforcementPolicy(keepalive.EnforcementPolicy{MinTime: minClientPing, PermitWithoutStream: true}),
	)
	s := &Server{hub: h, gs: gs, lis: lis, insecure: cfg.Insecure, served: make(chan struct{})}
	transportpb.RegisterRelayServer(gs, relay{s: s})
	go func() {
		defer close(s.served)
		if err := gs.Serve(lis); err != nil && !errors.Is(err, grpc.ErrServerStopped) {
			h.log.Error("transport: serve", "err", err)
		}
	}()
	go func() {
		select {
		case <-ctx.Done():
			s.Close()
		case <-h.done:
		}
	}()
	h.log.Info("transport: hub listening", "name", h.cfg.Name, "address", lis.Addr().String(), "protocol", h.cfg.Session.Protocol, "roster", strings.Join(h.cfg.Roster, ","))
	return s, nil
}

// Addr is the address the hub listens on.
func (s *Server) Addr() net.Addr { return s.lis.Addr() }

// Close stops the hub: parties are disconnected, waiting calls return.
func (s *Server) Close() error {
	s.closeOnce.Do(func() {
		s.closeHub()
		stopped := make(chan struct{})
		go func() {
			s.gs.GracefulStop()
			close(stopped)
		}()
		select {
		case <-stopped:
		case <-time.After(2 * time.Second):
			s.gs.Stop()
			<-stopped
		}
		<-s.served
	})
	return nil
}

// identity returns the party name proven by the peer's certificate, or in
// insecure mode the claimed name.
func (s *Server) identity(ctx context.Context, claimed string) (string, error) {
	if s.insecure {
		if err := validName(claimed); err != nil {
			return "", &Refusal{Reason: ReasonMalformed, msg: fmt.Sprintf("transport: sender %s is not a valid party name", clip(claimed))}
		}
		return claimed, nil
	}
	pr, ok := peer.FromContext(ctx)
	if !ok {
		return "", &Refusal{Reason: ReasonUnknownParty, msg: "transport: no peer information"}
	}
	ti, ok := pr.AuthInfo.(credentials.TLSInfo)
	if !ok {
		return "", &Refusal{Reason: ReasonUnknownParty, msg: "transport: connection without TLS"}
	}
	name, err := certs.PeerName(ti.State)
	if err != nil {
		return "", &Refusal{Reason: ReasonUnknownParty, msg: fmt.Sprintf("transport: peer %s: %v", pr.Addr, err)}
	}
	return name, nil
}

// relay implements transportpb.RelayServer on a Server.
type relay struct {
	transportpb.UnimplementedRelayServer
	s *Server
}

func (r relay) Send(ctx context.Context, in *transportpb.Envelope) (*transportpb.Ack, error) {
	id, err := r.s.identity(ctx, in.GetSender())
	if err != nil {
		return nil, toStatus(err)
	}
	if err := r.s.deliver(ctx, id, fromPB(in)); err != nil {
		return nil, toStatus(err)
	}
	return &transportpb.Ack{Seq: in.GetSeq()}, nil
}

func (r relay) Receive(in *transportpb.Attach, stream grpc.ServerStreamingServer[transportpb.Envelope]) error {
	ctx := stream.Context()
	id, err := r.s.identity(ctx, in.GetSender())
	if err != nil {
		return toStatus(err)
	}
	sub, last, err := r.s.attach(id, attachRequest{
		Protocol:     in.GetProtocol(),
		Session:      in.GetSession(),
		Sender:       in.GetSender(),
		LastReceived: in.GetLastReceived(),
	})
	if err != nil {
		return toStatus(err)
	}
	cause := connClosed(id)
	defer func() { r.s.detach(sub, cause) }()
	md := metadata.Pairs(headerLastAccepted, strconv.FormatUint(last, 10), headerMaxPayload, strconv.Itoa(r.s.cfg.MaxPayload))
	if err := stream.SendHeader(md); err != nil {
		cause = fmt.Errorf("transport: connection to %s lost: %w", id, err)
		return err
	}
	for {
		env, err := r.s.next(ctx, sub)
		if err != nil {
			if ctx.Err() != nil {
				cause = fmt.Errorf("transport: connection to %s lost: %w", id, ctx.Err())
			} else {
				cause = err
			}
			return toStatus(err)
		}
		if err := stream.Send(env.toPB()); err != nil {
			cause = fmt.Errorf("transport: connection to %s lost: %w", id, err)
			return err
		}
	}
}

// toStatus turns a hub error into a gRPC status; a *Refusal keeps its
// reason in an ErrorInfo detail so the party can rebuild it.
func toStatus(err error) error {
	var r *Refusal
	if errors.As(err, &r) {
		st := status.New(reasonCode(r.Reason), r.msg)
		if d, derr := st.WithDetails(&errdetails.ErrorInfo{Reason: string(r.Reason), Domain: errorDomain}); derr == nil {
			st = d
		}
		return st.Err()
	}
	switch {
	case errors.Is(err, context.Canceled):
		return status.Error(codes.Canceled, err.Error())
	case errors.Is(err, context.DeadlineExceeded):
		return status.Error(codes.DeadlineExceeded, err.Error())
	}
	return status.Error(codes.Internal, err.Error())
}

func reasonCode(r Reason) codes.Code {
	switch r {
	case ReasonUnknownParty, ReasonSenderMismatch:
		return codes.PermissionDenied
	case ReasonReplay, ReasonDuplicate:
		return codes.AlreadyExists
	case ReasonOversized, ReasonTooMany:
		return codes.ResourceExhausted
	case ReasonMalformed:
		return codes.InvalidArgument
	case ReasonReplaced:
		return codes.Aborted
	}
	return codes.FailedPrecondition
}

// loggingCreds logs refused TLS handshakes (a certificate from another CA,
// no certificate, TLS < 1.3), which never reach the Relay service, and
// closes a connection over its party's cap (partyLimits).
type loggingCreds struct {
	credentials.TransportCredentials
	h          *hub
	limits     *partyLimits
	handshakes *handshakeLimiter
}

func (c loggingCreds) ServerHandshake(conn net.Conn) (net.Conn, credentials.AuthInfo, error) {
	nc, ai, err := c.TransportCredentials.ServerHandshake(conn)
	c.handshakes.handshaken(conn)
	if err != nil {
		logLimited(c.h.warnings, c.h.log, "(TLS handshakes)", "handshake-refused", "transport: TLS handshake refused", "remote", conn.RemoteAddr().String(), "err", err.Error())
		return nc, ai, err
	}
	ti, ok := ai.(credentials.TLSInfo)
	if !ok {
		return nc, ai, err
	}
	name, perr := certs.PeerName(ti.State)
	if perr != nil {
		return nc, ai, err // refused later, with the reason, by identity
	}
	release, n, ok := c.limits.conn(name)
	if !ok {
		nc.Close()
		r := &Refusal{Reason: ReasonTooMany, msg: fmt.Sprintf("transport: connection from %s (%s) closed: it already has %d connections open, the cap per party", name, conn.RemoteAddr(), n)}
		c.h.refused(name, r)
		return nil, nil, r
	}
	return &countedConn{Conn: nc, release: release}, ai, nil
}

func (c loggingCreds) Clone() credentials.TransportCredentials {
	return loggingCreds{TransportCredentials: c.TransportCredentials.Clone(), h: c.h, limits: c.limits, handshakes: c.handshakes}
}

// partyLimits counts the connections and calls open per party name.
type partyLimits struct {
	maxConns, maxCalls int
	roster             map[string]*partyState // names outside it share one count

	mu    sync.Mutex
	conns map[string]int
	calls map[string]int
}

// conn counts one more connection of name; ok false (with the number
// open) if that would pass the cap. release undoes it.
func (l *partyLimits) conn(name string) (release func(), open int, ok bool) {
	if l.roster[name] == nil {
		name = "(names not in the roster)"
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if n := l.conns[name]; n >= l.maxConns {
		return nil, n, false
	}
	l.conns[name]++
	return func() {
		l.mu.Lock()
		defer l.mu.Unlock()
		if l.conns[name]--; l.conns[name] <= 0 {
			delete(l.conns, name)
		}
	}, 0, true
}

// call counts one more call of the party proven by ctx's certificate; it
// refuses it (ReasonTooMany, logged by the hub's limiter) past the cap.
func (l *partyLimits) call(ctx context.Context, h *hub, insecure bool) (release func(), err error) {
	if insecure {
		return func() {}, nil
	}
	pr, ok := peer.FromContext(ctx)
	if !ok {
		return func() {}, nil
	}
	ti, ok := pr.AuthInfo.(credentials.TLSInfo)
	if !ok {
		return func() {}, nil
	}
	name, err := certs.PeerName(ti.State)
	if err != nil {
		return func() {}, nil // refused by the handler, with the reason
	}
	l.mu.Lock()
	n := l.calls[name]
	if n >= l.maxCalls {
		l.mu.Unlock()
		return nil, toStatus(h.refused(name, &Refusal{Reason: ReasonTooMany, msg: fmt.Sprintf("transport: call from %s refused: it already has %d calls in progress, the cap per party", name, n)}))
	}
	l.calls[name]++
	l.mu.Unlock()
	return func() {
		l.mu.Lock()
		defer l.mu.Unlock()
		if l.calls[name]--; l.calls[name] <= 0 {
			delete(l.calls, name)
		}
	}, nil
}

// countedConn releases its count in partyLimits when closed.
type countedConn struct {
	net.Conn
	once    sync.Once
	release func()
}

func (c *countedConn) Close() error {
	c.once.Do(c.release)
	return c.Conn.Close()
}

// requireLoopback refuses an address whose host is not a loopback IP or
// "localhost" (insecure mode). It never resolves names.
func requireLoopback(addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("transport: address %q: %w", addr, err)
	}
	if host == "localhost" {
		return nil
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
		return nil
	}
	return fmt.Errorf("transport: insecure mode refuses address %q: plaintext is allowed on loopback only (127.0.0.1, ::1, localhost)", addr)
}

// DefaultMaxHandshakes is ServerConfig.MaxHandshakes's default.
const DefaultMaxHandshakes = 32

// handshakeLimiter accepts a connection only while fewer than cap(slots)
// accepted connections are in their TLS handshake. The connection itself
// is returned as is (gRPC sets socket options on a *net.TCPConn);
// loggingCreds frees its slot when the handshake ends.
type handshakeLimiter struct {
	net.Listener
	slots     chan struct{}
	pending   sync.Map // net.Conn → struct{}: accepted, handshake not ended
	closed    chan struct{}
	closeOnce sync.Once
}

func newHandshakeLimiter(lis net.Listener, n int) *handshakeLimiter {
	return &handshakeLimiter{Listener: lis, slots: make(chan struct{}, n), closed: make(chan struct{})}
}

func (l *handshakeLimiter) Accept() (net.Conn, error) {
	select {
	case l.slots <- struct{}{}:
	case <-l.closed:
		return nil, net.ErrClosed
	}
	c, err := l.Listener.Accept()
	if err != nil {
		<-l.slots
		return nil, err
	}
	l.pending.Store(c, struct{}{})
	return c, nil
}

// handshaken frees the slot of conn, once.
func (l *handshakeLimiter) handshaken(conn net.Conn) {
	if _, ok := l.pending.LoadAndDelete(conn); ok {
		<-l.slots
	}
}

func (l *handshakeLimiter) Close() error {
	l.closeOnce.Do(func() { close(l.closed) })
	return l.Listener.Close()
}
