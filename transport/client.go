package transport

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/dplearn/dplearn/certs"
	"github.com/dplearn/dplearn/transport/transportpb"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/keepalive"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/dplearn/dplearn/internal/logx"
)

// ClientConfig configures a party's connection to a hub (Dial).
type ClientConfig struct {
	// Address is the hub's host:port.
	Address string
	// Server is the hub's party name; the hub's certificate must carry it
	// (whatever Address is).
	Server string
	// Identity is this party's certificate (certs.LoadParty). Required
	// unless Insecure.
	Identity *certs.Party
	// Insecure connects in plaintext, to a loopback address only, for local
	// tests. Name is then required.
	Insecure bool
	// Name is this party's name; with an Identity it is the certificate's
	// and may be left empty.
	Name string
	// Session is the protocol and session to join.
	Session Session
	// Attempts bounds the connection attempts when attaching (at Dial and
	// after a lost connection) and the tries of one Send over a failing
	// connection. Default 8.
	Attempts int
	// Backoff is the delay after the first failed attempt, doubled (with
	// ±20% jitter) up to MaxBackoff. Defaults 200 ms and 5 s.
	Backoff, MaxBackoff time.Duration
	// PeerTimeout bounds every wait on a hub that cannot be reached: once
	// the connection to the hub has been down (closed, refused, not
	// answering keepalive pings) for this long without coming back, the
	// party gives up: every Send in progress or to come and every Recv
	// returns a *HubGoneError ("the hub H at A is gone: no answer for
	// 20s"), whatever the caller's context. Re-attaching also gives up
	// after Attempts attempts, whichever comes first. A hub that froze
	// without closing its connections is noticed by the keepalive first
	// (KeepaliveTime + KeepaliveTimeout), so the bound is then
	// KeepaliveTime + KeepaliveTimeout + PeerTimeout. Default
	// DefaultPeerTimeout.
	PeerTimeout time.Duration
	// AckTimeout bounds one Send: a hub that is connected but does not
	// acknowledge the envelope within it (its protocol has stopped taking
	// messages) makes Send fail saying so, whatever the caller's context.
	// Default DefaultAckTimeout (10 min, the CLI's --idle-timeout).
	AckTimeout time.Duration
	// KeepaliveTime and KeepaliveTimeout: the party pings an idle hub after
	// KeepaliveTime (gRPC's minimum and the default: 10 s) and drops the
	// connection if no answer comes within KeepaliveTimeout (default 5 s).
	KeepaliveTime, KeepaliveTimeout time.Duration
	// MaxPayload caps the payload of envelopes this party accepts from the
	// hub; default DefaultMaxPayload.
	MaxPayload int
	// Dialer, if set, opens the TCP connection (tests put a proxy here).
	Dialer func(ctx context.Context, addr string) (net.Conn, error)
	// Logger receives connection changes (Info) and problems (Warn), with
	// party, hub, address, attempt, seq and err as attributes; payloads are
	// never logged. nil discards.
	Logger *slog.Logger
}

// Client is a party's Conn to a hub over gRPC: envelopes go up with a unary
// Send (acknowledged once the hub accepted them) and come down on one
// server stream (Receive), which the client re-opens if the connection is
// lost, resuming after the last envelope it received.
type Client struct {
	cfg  ClientConfig
	log  *slog.Logger
	cc   *grpc.ClientConn
	rpc  transportpb.RelayClient
	life context.Context
	stop context.CancelFunc

	sendMu sync.Mutex

	mu         sync.Mutex
	nextSeq    uint64
	hubPayload int // the hub's cap, from the Receive header
	closed     bool

	ds       downstream // owned by the receiving goroutine (and Dial before it starts)
	items    chan item
	dead     chan struct{} // closed when the connection ended for good; deadErr says why
	deadErr  error
	deadOnce sync.Once
	lastNet  error // last network error seen by Send or attach (guarded by mu)
	wg       sync.WaitGroup
}

// DefaultPeerTimeout is ClientConfig.PeerTimeout's default: how long a
// party waits for a hub it cannot reach before it gives up.
const DefaultPeerTimeout = 20 * time.Second

// DefaultAckTimeout is ClientConfig.AckTimeout's default.
const DefaultAckTimeout = 10 * time.Minute

// HubGoneError is returned by a party's Send and Recv once its hub has been
// unreachable for ClientConfig.PeerTimeout, or re-attaching to it failed
// ClientConfig.Attempts times: the hub process died or its machine or the
// network is gone, and the party gives up rather than wait forever.
type HubGoneError struct {
	Party, Hub, Address string
	// For is how long the party had no answer from the hub.
	For time.Duration
	// Detail says how the party noticed (peer timeout, failed attempts).
	Detail string
	// Err is the last network error seen, if any.
	Err error
}

func (e *HubGoneError) Error() string {
	msg := fmt.Sprintf("transport: %s: the hub %s at %s is gone: no answer for %v", e.Party, e.Hub, e.Address, e.For.Round(100*time.Millisecond))
	if e.Detail != "" {
		msg += " (" + e.Detail + ")"
	}
	if e.Err != nil {
		msg += "; last error: " + e.Err.Error()
	}
	return msg
}

func (e *HubGoneError) Unwrap() error { return e.Err }

type item struct {
	env Envelope
	err error
}

// Dial connects to the hub with mutual TLS 1.3, attaches (retrying with
// backoff, up to cfg.Attempts) and returns the party's Conn. A refusal
// (unknown name, wrong session, ...) is returned at once as a *Refusal.
func Dial(ctx context.Context, cfg ClientConfig) (*Client, error) {
	if err := cfg.normalize(); err != nil {
		return nil, err
	}
	log := cfg.Logger
	var creds credentials.TransportCredentials
	if cfg.Insecure {
		if err := requireLoopback(cfg.Address); err != nil {
			return nil, err
		}
		log.Warn("transport: INSECURE connection: plaintext, no certificates; for local tests only", "party", cfg.Name, "address", cfg.Address)
		creds = insecureCreds()
	} else {
		tc, err := cfg.Identity.ClientTLS(cfg.Server)
		if err != nil {
			return nil, err
		}
		creds = credentials.NewTLS(tc)
	}
	dial := cfg.Dialer
	if dial == nil {
		dial = func(ctx context.Context, addr string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "tcp", addr)
		}
	}
	insecureMode := cfg.Insecure
	guarded := func(ctx context.Context, addr string) (net.Conn, error) {
		if insecureMode {
			if err := requireLoopback(addr); err != nil {
				return nil, err
			}
		}
		return dial(ctx, addr)
	}
	limit := cfg.MaxPayload + envelopeOverhead
	cc, err := grpc.NewClient("passthrough:///"+cfg.Address,
		grpc.WithTransportCredentials(creds),
		grpc.WithContextDialer(guarded),
		grpc.WithKeepaliveParams(keepalive.ClientParameters{Time: cfg.KeepaliveTime, Timeout: cfg.KeepaliveTimeout, PermitWithoutStream: true}),
		grpc.WithConnectParams(grpc.ConnectParams{
			Backoff:           backoff.Config{BaseDelay: cfg.Backoff, Multiplier: 2, Jitter: 0.2, MaxDelay: cfg.MaxBackoff},
			MinConnectTimeout: 5 * time.Second,
		}),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(limit), grpc.MaxCallSendMsgSize(limit)),
	)
	if err != nil {
		return nil, fmt.Errorf("transport: %s: dial %s: %w", cfg.Name, cfg.Address, err)
	}
	life, stop := context.WithCancel(context.Background())
	c := &Client{
		cfg:     cfg,
		log:     log,
		cc:      cc,
		rpc:     transportpb.NewRelayClient(cc),
		life:    life,
		stop:    stop,
		nextSeq: 1,
		ds:      downstream{session: cfg.Session, me: cfg.Name, hub: cfg.Server},
		items:   make(chan item, 64),
		dead:    make(chan struct{}),
	}
	stream, cancel, err := c.attach(ctx)
	if err != nil {
		stop()
		cc.Close()
		return nil, err
	}
	log.Info("transport: attached to hub", "party", cfg.Name, "hub", cfg.Server, "address", cfg.Address)
	c.wg.Add(2)
	go c.receive(stream, cancel)
	go c.watch()
	return c, nil
}

func (cfg *ClientConfig) normalize() error {
	if cfg.Insecure == (cfg.Identity != nil) {
		if cfg.Insecure {
			return errors.New("transport: Insecure with an Identity: choose one")
		}
		return errors.New("transport: no Identity (certificate) for the party; Insecure is for local tests only")
	}
	if cfg.Identity != nil {
		if cfg.Name != "" && cfg.Name != cfg.Identity.Name {
			return fmt.Errorf("transport: party name %q differs from its certificate's %q", cfg.Name, cfg.Identity.Name)
		}
		cfg.Name = cfg.Identity.Name
	}
	if err := validName(cfg.Name); err != nil {
		return fmt.Errorf("transport: party name: %w", err)
	}
	if err := validName(cfg.Server); err != nil {
		return fmt.Errorf("transport: hub name: %w", err)
	}
	if err := cfg.Session.validate(); err != nil {
		return err
	}
	if _, _, err := net.SplitHostPort(cfg.Address); err != nil {
		return fmt.Errorf("transport: hub address %q: %w", cfg.Address, err)
	}
	if cfg.Attempts <= 0 {
		cfg.Attempts = 8
	}
	if cfg.Backoff <= 0 {
		cfg.Backoff = 200 * time.Millisecond
	}
	if cfg.MaxBackoff <= 0 {
		cfg.MaxBackoff = 5 * time.Second
	}
	if cfg.MaxBackoff < cfg.Backoff {
		cfg.MaxBackoff = cfg.Backoff
	}
	if cfg.PeerTimeout <= 0 {
		cfg.PeerTimeout = DefaultPeerTimeout
	}
	if cfg.AckTimeout <= 0 {
		cfg.AckTimeout = DefaultAckTimeout
	}
	if cfg.KeepaliveTime <= 0 {
		cfg.KeepaliveTime = DefaultClientKeepaliveTime
	}
	if cfg.KeepaliveTimeout <= 0 {
		cfg.KeepaliveTimeout = DefaultClientKeepaliveTimeout
	}
	if cfg.MaxPayload <= 0 {
		cfg.MaxPayload = DefaultMaxPayload
	}
	cfg.Logger = logx.OrDiscard(cfg.Logger)
	return nil
}

func insecureCreds() credentials.TransportCredentials { return insecure.NewCredentials() }

// Name is the party's name.
func (c *Client) Name() string { return c.cfg.Name }

// attach opens the Receive stream, retrying transient failures with
// backoff. The stream lives until the returned cancel is called or the
// client closes; ctx bounds only the attaching.
func (c *Client) attach(ctx context.Context) (grpc.ServerStreamingClient[transportpb.Envelope], context.CancelFunc, error) {
	var lastErr error
	delay := c.cfg.Backoff
	for attempt := 1; ; attempt++ {
		sctx, cancel := context.WithCancel(c.life)
		unhook := context.AfterFunc(ctx, cancel)
		req := &transportpb.Attach{
			Protocol:     c.cfg.Session.Protocol,
			Session:      c.cfg.Session.ID,
			Sender:       c.cfg.Name,
			LastReceived: c.ds.lastRecv,
		}
		stream, err := c.rpc.Receive(sctx, req)
		var md metadata.MD
		if err == nil {
			md, err = stream.Header()
			if err == nil && md == nil {
				// The stream ended without a header: its status says why.
				if _, err = stream.Recv(); err == nil || errors.Is(err, io.EOF) {
					err = errors.New("transport: the hub ended the stream without a header")
				}
			}
		}
		unhook()
		if err == nil {
			c.applyHeader(md)
			return stream, cancel, nil
		}
		cancel()
		lastErr = c.convert(err, "attach to")
		c.noteNet(err)
		if !retryable(err) || ctx.Err() != nil || c.life.Err() != nil || attempt >= c.cfg.Attempts {
			if _, refused := RefusalReason(lastErr); refused {
				return nil, nil, lastErr
			}
			return nil, nil, fmt.Errorf("transport: %s: cannot attach to %s at %s after %d attempt(s): %w", c.cfg.Name, c.cfg.Server, c.cfg.Address, attempt, lastErr)
		}
		wait := jitter(delay)
		c.log.Warn("transport: cannot attach to hub; retrying", "party", c.cfg.Name, "hub", c.cfg.Server, "attempt", attempt, "retry_in", wait.Round(time.Millisecond).String(), "err", err.Error())
		if !sleep(ctx, c.life, wait) {
			return nil, nil, fmt.Errorf("transport: %s: attach to %s: %w", c.cfg.Name, c.cfg.Server, errors.Join(ctx.Err(), c.life.Err(), lastErr))
		}
		delay = min(2*delay, c.cfg.MaxBackoff)
	}
}

func (c *Client) applyHeader(md metadata.MD) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if v := md.Get(headerLastAccepted); len(v) == 1 {
		if last, err := strconv.ParseUint(v[0], 10, 64); err == nil && last+1 > c.nextSeq {
			c.nextSeq = last + 1
		}
	}
	if v := md.Get(headerMaxPayload); len(v) == 1 {
		if n, err := strconv.Atoi(v[0]); err == nil && n > 0 {
			c.hubPayload = n
		}
	}
}

// receive reads the downstream, re-attaching when the connection is lost,
// until the client closes or re-attaching fails.
func (c *Client) receive(stream grpc.ServerStreamingClient[transportpb.Envelope], cancel context.CancelFunc) {
	defer c.wg.Done()
	quick := 0 // consecutive streams that failed at once without delivering
	for {
		start := time.Now()
		got, err := c.pump(stream)
		lost := time.Now()
		cancel()
		if c.life.Err() != nil {
			c.fail(fmt.Errorf("transport: %s: connection closed", c.cfg.Name))
			return
		}
		// A refusal (replaced by a newer connection, hub closed, envelope
		// over this party's size limit) is final; anything else is a lost
		// connection.
		if conv := c.convert(err, "receive from"); isRefusal(conv) {
			c.fail(conv)
			return
		}
		if got || time.Since(start) > 2*time.Second {
			quick = 0
		} else {
			quick++
		}
		if quick >= c.cfg.Attempts {
			c.fail(fmt.Errorf("transport: %s: the stream from %s failed %d times in a row: %w", c.cfg.Name, c.cfg.Server, quick, err))
			return
		}
		c.log.Warn("transport: lost the stream from the hub; re-attaching", "party", c.cfg.Name, "hub", c.cfg.Server, "err", err.Error())
		if quick > 0 && !sleep(c.life, c.life, jitter(min(c.cfg.Backoff<<min(quick, 16), c.cfg.MaxBackoff))) {
			c.fail(fmt.Errorf("transport: %s: connection closed", c.cfg.Name))
			return
		}
		stream, cancel, err = c.attach(c.life)
		if err != nil {
			switch {
			case c.life.Err() != nil:
				c.fail(fmt.Errorf("transport: %s: connection closed", c.cfg.Name))
			case isRefusal(err):
				c.fail(err)
			default:
				c.fail(&HubGoneError{Party: c.cfg.Name, Hub: c.cfg.Server, Address: c.cfg.Address, For: time.Since(lost),
					Detail: fmt.Sprintf("the connection was lost and %d attempt(s) to re-attach failed", c.cfg.Attempts), Err: c.lastNetErr()})
			}
			return
		}
		c.log.Info("transport: re-attached to hub", "party", c.cfg.Name, "hub", c.cfg.Server, "last_received", c.ds.lastRecv)
	}
}

// pump moves envelopes from the stream to Recv until the stream fails. got
// reports whether any envelope arrived.
func (c *Client) pump(stream grpc.ServerStreamingClient[transportpb.Envelope]) (got bool, err error) {
	for {
		m, err := stream.Recv()
		if err != nil {
			return got, err
		}
		got = true
		env := fromPB(m)
		ok, gap, err := c.ds.accept(env)
		if err != nil {
			c.log.Warn("transport: dropped a misaddressed envelope", "party", c.cfg.Name, "err", err.Error())
			continue
		}
		if !ok {
			continue
		}
		if gap != nil {
			c.log.Warn("transport: envelopes lost", "party", c.cfg.Name, logx.Err(gap))
			if !c.push(item{err: gap}) {
				return got, c.life.Err()
			}
		}
		if !c.push(item{env: env}) {
			return got, c.life.Err()
		}
	}
}

func (c *Client) push(it item) bool {
	select {
	case c.items <- it:
		return true
	case <-c.life.Done():
		return false
	}
}

// fail ends the connection for good with err (the first call wins): Recv
// and Send return err from now on, and a Send in progress is cancelled.
func (c *Client) fail(err error) {
	c.deadOnce.Do(func() {
		c.deadErr = err
		close(c.dead)
	})
}

// noteNet records a network error for the message of a HubGoneError.
func (c *Client) noteNet(err error) {
	if err == nil {
		return
	}
	if st, ok := status.FromError(err); ok {
		if st.Code() != codes.Unavailable {
			return // a refusal, a deadline: not the network
		}
		err = errors.New(st.Message())
	}
	c.mu.Lock()
	c.lastNet = err
	c.mu.Unlock()
}

func (c *Client) lastNetErr() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.lastNet
}

// watch follows the connection to the hub: once it has been down (not
// READY) for PeerTimeout without a break, the hub is gone and the client
// fails with a *HubGoneError, ending every wait. It returns when the client
// closes or fails.
func (c *Client) watch() {
	defer c.wg.Done()
	// end is done when the client closes or fails.
	end, endNow := context.WithCancel(c.life)
	defer endNow()
	go func() {
		select {
		case <-c.dead:
			endNow()
		case <-end.Done():
		}
	}()
	var downSince time.Time
	for end.Err() == nil {
		st := c.cc.GetState()
		if st == connectivity.Shutdown {
			return
		}
		if st == connectivity.Ready {
			downSince = time.Time{}
			c.cc.WaitForStateChange(end, st)
			continue
		}
		if downSince.IsZero() {
			downSince = time.Now()
		}
		left := c.cfg.PeerTimeout - time.Since(downSince)
		if left <= 0 {
			c.fail(&HubGoneError{Party: c.cfg.Name, Hub: c.cfg.Server, Address: c.cfg.Address, For: time.Since(downSince),
				Detail: fmt.Sprintf("the connection has been down for the peer timeout of %v", c.cfg.PeerTimeout), Err: c.lastNetErr()})
			c.log.Warn("transport: the hub is gone; giving up", "party", c.cfg.Name, "hub", c.cfg.Server, "address", c.cfg.Address, "peer_timeout", c.cfg.PeerTimeout.String())
			c.stop()
			return
		}
		wctx, cancel := context.WithTimeout(end, left)
		c.cc.WaitForStateChange(wctx, st)
		cancel()
	}
}

// Send delivers env to the hub (see Conn). A Send over a failing connection
// is retried, with the same sequence number, up to cfg.Attempts; if an
// earlier try did reach the hub, the retry's replay refusal counts as
// success. Waiting for a hub that cannot be reached is bounded by
// cfg.PeerTimeout whatever ctx allows (the Send then returns the
// *HubGoneError), and waiting for the acknowledgement of a connected hub by
// cfg.AckTimeout; either way the envelope may or may not have arrived.
func (c *Client) Send(ctx context.Context, env Envelope) error {
	c.sendMu.Lock()
	defer c.sendMu.Unlock()
	select {
	case <-c.dead: // the connection ended for good (hub closed, refused, replaced)
		return fmt.Errorf("transport: %s: send: %w", c.cfg.Name, c.deadErr)
	default:
	}
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return fmt.Errorf("transport: %s: send on a closed connection", c.cfg.Name)
	}
	env.Seq = c.nextSeq
	c.nextSeq++
	hubCap := c.hubPayload
	c.mu.Unlock()
	env.Protocol, env.Session = c.cfg.Session.Protocol, c.cfg.Session.ID
	env.Sender, env.Recipient = c.cfg.Name, c.cfg.Server
	if env.Type == "" || len(env.Type) > maxTypeLen {
		return fmt.Errorf("transport: %s: message type of %d bytes (want 1 to %d)", c.cfg.Name, len(env.Type), maxTypeLen)
	}
	if hubCap > 0 && len(env.Payload) > hubCap {
		return &Refusal{Reason: ReasonOversized, msg: fmt.Sprintf("transport: %s: payload of %d bytes exceeds %s's cap of %d bytes; not sent", c.cfg.Name, len(env.Payload), c.cfg.Server, hubCap)}
	}
	m := env.toPB()
	// The call also ends when the connection ends for good (the hub is
	// gone for PeerTimeout, re-attaching failed, the hub closed, Close):
	// waiting for the hub to be ready is bounded by that, not only by ctx.
	ackBy := time.Now().Add(c.cfg.AckTimeout)
	sctx, cancel := context.WithDeadline(ctx, ackBy)
	defer cancel()
	go func() {
		select {
		case <-c.dead:
			cancel()
		case <-sctx.Done():
		}
	}()
	ended := func(err error) error {
		select {
		case <-c.dead:
			return fmt.Errorf("%w (the send of seq %d was not acknowledged)", c.deadErr, env.Seq)
		default:
		}
		// The deadline that passed is AckTimeout's unless the caller's came
		// first. (gRPC sends the deadline along: the hub's side may report
		// it a moment before this side's context does.)
		d, callerDeadline := ctx.Deadline()
		if (errors.Is(sctx.Err(), context.DeadlineExceeded) || status.Code(err) == codes.DeadlineExceeded) && (!callerDeadline || d.After(ackBy)) {
			return fmt.Errorf("transport: %s: the hub %s at %s did not acknowledge envelope %d (%s) within %v: its protocol has stopped taking messages", c.cfg.Name, c.cfg.Server, c.cfg.Address, env.Seq, env.Type, c.cfg.AckTimeout)
		}
		return nil
	}
	delay := c.cfg.Backoff
	for attempt := 1; ; attempt++ {
		_, err := c.rpc.Send(sctx, m, grpc.WaitForReady(true))
		if err == nil {
			return nil
		}
		if ctx.Err() == nil {
			if e := ended(err); e != nil {
				return e
			}
		}
		c.noteNet(err)
		conv := c.convert(err, "send to")
		if r, ok := RefusalReason(conv); ok && r == ReasonReplay && attempt > 1 {
			return nil // an earlier try was accepted; its acknowledgement was lost
		}
		if status.Code(err) != codes.Unavailable || attempt >= c.cfg.Attempts || ctx.Err() != nil {
			return conv
		}
		c.log.Warn("transport: send failed; retrying", "party", c.cfg.Name, "seq", env.Seq, "attempt", attempt, "err", err.Error())
		if !sleep(sctx, c.life, jitter(delay)) {
			if e := ended(nil); e != nil && ctx.Err() == nil {
				return e
			}
			return conv
		}
		delay = min(2*delay, c.cfg.MaxBackoff)
	}
}

// Recv returns the next envelope from the hub (see Conn).
func (c *Client) Recv(ctx context.Context) (Envelope, error) {
	select {
	case it := <-c.items:
		return it.env, it.err
	default:
	}
	select {
	case it := <-c.items:
		return it.env, it.err
	case <-c.dead:
		select {
		case it := <-c.items:
			return it.env, it.err
		default:
			return Envelope{}, c.deadErr
		}
	case <-ctx.Done():
		return Envelope{}, fmt.Errorf("transport: %s: receive: %w", c.cfg.Name, ctx.Err())
	}
}

// Close detaches from the hub and releases the connection.
func (c *Client) Close() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	c.closed = true
	c.mu.Unlock()
	c.stop()
	err := c.cc.Close()
	c.wg.Wait()
	if err != nil {
		return fmt.Errorf("transport: %s: close: %w", c.cfg.Name, err)
	}
	return nil
}

// convert rebuilds a hub refusal from a gRPC status, or wraps err with
// the party, the operation and the hub.
func (c *Client) convert(err error, op string) error {
	st, ok := status.FromError(err)
	if !ok {
		return fmt.Errorf("transport: %s: %s %s: %w", c.cfg.Name, op, c.cfg.Server, err)
	}
	for _, d := range st.Details() {
		if ei, ok := d.(*errdetails.ErrorInfo); ok && ei.GetDomain() == errorDomain {
			return &Refusal{Reason: Reason(ei.GetReason()), msg: fmt.Sprintf("transport: refused by %s: %s", c.cfg.Server, strings.TrimPrefix(st.Message(), "transport: "))}
		}
	}
	if st.Code() == codes.ResourceExhausted {
		return &Refusal{Reason: ReasonOversized, msg: fmt.Sprintf("transport: %s: %s %s: message too large: %s", c.cfg.Name, op, c.cfg.Server, st.Message())}
	}
	return fmt.Errorf("transport: %s: %s %s at %s: %w", c.cfg.Name, op, c.cfg.Server, c.cfg.Address, err)
}

func isRefusal(err error) bool {
	_, ok := RefusalReason(err)
	return ok
}

// retryable reports whether an attach failure may be transient. A
// certificate that fails verification (from another CA, a hub presenting
// another party's name, expired, or refused by the peer) is reported by gRPC
// as Unavailable too, but retrying cannot fix it: it fails at once. A
// handshake cut short (EOF, reset) stays retryable: that is a network event,
// as when a party reconnects through a broken link (TestReconnect).
func retryable(err error) bool {
	if status.Code(err) != codes.Unavailable {
		return false
	}
	msg := status.Convert(err).Message()
	for _, s := range []string{"x509:", "tls: bad certificate", "tls: unknown certificate", "certificate required", "certificate is not valid"} {
		if strings.Contains(msg, s) {
			return false
		}
	}
	return true
}

// jitter spreads d by ±20%.
func jitter(d time.Duration) time.Duration {
	return time.Duration(float64(d) * (0.8 + 0.4*rand.Float64()))
}

// sleep waits d unless a or b ends first; it reports whether d elapsed.
func sleep(a, b context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-a.Done():
		return false
	case <-b.Done():
		return false
	}
}
