package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/dplearn/dplearn/capefm"
	"github.com/dplearn/dplearn/capenet"
	"github.com/dplearn/dplearn/transport/transportpb"
)

// capeFault is the test hook of `cape join` (--test-fault, for the fault
// tests; documented in docs/capefm.md). It exists only in the test binary:
// init below registers the flag through addCapeJoinFaults, so the shipped
// binary neither shows nor parses it (TestNoTestHooksShipped). It makes the site misbehave
// from its own side only, as a broken or malicious site could anyway:
//
//	exit-at-round=R      exit(1) just before sending this site's message of round R
//	                     (its announcement does not count: exit-at-round=0 exits
//	                     before its Hello)
//	replay-at-round=R    before sending its message of round R, send that payload
//	                     again with sequence number 1 (already used by its
//	                     announcement) on a second connection: a replayed message
//	oversize-at-round=R  before sending its message of round R, send a payload one
//	                     byte over the hub's cap for the fit
//	claim-name=NAME      announce and take part under NAME (the certificate keeps
//	                     its own name): a site presenting another site's name
//	sign-keys-with=DIR   sign its secure-aggregation keys with the certificate in
//	                     DIR (another party's, or one from another CA) instead of
//	                     its own: a key advertisement that fails its check
//
// Several are separated by commas.
type capeFault struct {
	exitAt, replayAt, oversizeAt int
	claim                        string
	signWith                     string
}

// none reports whether no fault needs the BeforeSend hook (sign-keys-with
// acts on the site's configuration instead).
func (f capeFault) none() bool {
	return f.exitAt < 0 && f.replayAt < 0 && f.oversizeAt < 0 && f.claim == ""
}

func parseFault(s string) (capeFault, error) {
	f := capeFault{exitAt: -1, replayAt: -1, oversizeAt: -1}
	if s == "" {
		return f, nil
	}
	for _, part := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(part), "=")
		if !ok {
			return f, fmt.Errorf("--test-fault %q: want KEY=VALUE", part)
		}
		if k == "claim-name" {
			f.claim = v
			continue
		}
		if k == "sign-keys-with" {
			f.signWith = v
			continue
		}
		r, err := strconv.Atoi(v)
		if err != nil || r < 0 || r > int(capefm.RoundCombine) {
			return f, fmt.Errorf("--test-fault %q: round must be 0 to %d", part, capefm.RoundCombine)
		}
		switch k {
		case "exit-at-round":
			f.exitAt = r
		case "replay-at-round":
			f.replayAt = r
		case "oversize-at-round":
			f.oversizeAt = r
		default:
			return f, fmt.Errorf("--test-fault %q: unknown fault", part)
		}
	}
	return f, nil
}

func (f capeFault) claimName() string    { return f.claim }
func (f capeFault) signKeysWith() string { return f.signWith }

func init() {
	addCapeJoinFaults = func(fs *pflag.FlagSet) func() (capeJoinFaults, error) {
		v := fs.String("test-fault", "", "test hook (see docs/capefm.md)")
		_ = fs.MarkHidden("test-fault")
		return func() (capeJoinFaults, error) { return parseFault(*v) }
	}
}

// hook returns the BeforeSend hook that injects the faults (nil: none).
func (f capeFault) hook(w io.Writer, t faultTarget) func(context.Context, capefm.Message, []byte, *capefm.Params) error {
	if f.none() {
		return nil
	}
	return func(ctx context.Context, m capefm.Message, payload []byte, current *capefm.Params) error {
		r := int(m.Round())
		if r == f.exitAt && m.Type() != "announce" {
			fmt.Fprintf(w, "test fault: %s exits before sending its %s message of round %d\n", t.name, m.Type(), r)
			os.Exit(1)
		}
		if r == f.replayAt && m.Type() != "announce" {
			err := rawSend(ctx, t, &transportpb.Envelope{Round: uint64(r), Type: m.Type(), Seq: 1, Payload: payload})
			fmt.Fprintf(w, "test fault: %s replayed a %s message with sequence number 1: %v\n", t.name, m.Type(), err)
		}
		if r == f.oversizeAt && m.Type() != "announce" && current != nil {
			// One byte over the cap of a hub expecting exactly this
			// attempt's sites; sequence number 1 (already used), so that
			// it could never be accepted even under a larger cap.
			big := make([]byte, capenet.MaxPayload(t.d, len(current.Sites))+1)
			copy(big, payload)
			err := rawSend(ctx, t, &transportpb.Envelope{Round: uint64(r), Type: m.Type(), Seq: 1, Payload: big})
			fmt.Fprintf(w, "test fault: %s sent a %d-byte %s message: %v\n", t.name, len(big), m.Type(), err)
		}
		return nil
	}
}

// rawSend sends one envelope on a separate connection, bypassing the
// transport client's own numbering and size check.
func rawSend(ctx context.Context, t faultTarget, env *transportpb.Envelope) error {
	var creds credentials.TransportCredentials
	if t.insecure {
		creds = insecure.NewCredentials()
	} else {
		tc, err := t.id.ClientTLS(t.server)
		if err != nil {
			return err
		}
		creds = credentials.NewTLS(tc)
	}
	cc, err := grpc.NewClient("passthrough:///"+t.address, grpc.WithTransportCredentials(creds),
		grpc.WithDefaultCallOptions(grpc.MaxCallSendMsgSize(64<<20)))
	if err != nil {
		return err
	}
	defer cc.Close()
	s := capenet.Session()
	env.Protocol, env.Session, env.Sender, env.Recipient = s.Protocol, s.ID, t.name, t.server
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	_, err = transportpb.NewRelayClient(cc).Send(cctx, env)
	return err
}
