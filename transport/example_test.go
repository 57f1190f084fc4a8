package transport_test

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/dplearn/dplearn/certs"
	"github.com/dplearn/dplearn/transport"
)

// A hub and two parties in one process: the protocol code is the same as
// over gRPC (Listen and Dial).
func ExampleNewMemory() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	quiet := slog.New(slog.DiscardHandler)
	hub, err := transport.NewMemory(transport.HubConfig{
		Name:    "aggregator",
		Session: transport.Session{Protocol: "demo", ID: []byte("run-1")},
		Roster:  []string{"site-1", "site-2"},
		Logger:  quiet,
	})
	if err != nil {
		panic(err)
	}
	defer hub.Close()
	var conns []transport.Conn
	for _, name := range []string{"site-1", "site-2"} {
		c, err := hub.Dial(ctx, name)
		if err != nil {
			panic(err)
		}
		defer c.Close()
		conns = append(conns, c)
	}
	hub.SetRound(1)
	for i, c := range conns {
		if err := c.Send(ctx, transport.Envelope{Round: 1, Type: "value", Payload: []byte{byte(10 * (i + 1))}}); err != nil {
			panic(err)
		}
	}
	sum := 0
	for range conns {
		env := <-hub.Inbox()
		sum += int(env.Payload[0])
	}
	fmt.Println("sum:", sum)
	// A message for a past round is refused.
	err = conns[0].Send(ctx, transport.Envelope{Round: 0, Type: "value"})
	reason, _ := transport.RefusalReason(err)
	fmt.Println("refused:", reason)
	// Output:
	// sum: 30
	// refused: wrong-round
}

// A hub and a party over gRPC with mutual TLS on 127.0.0.1.
func ExampleListen() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	quiet := slog.New(slog.DiscardHandler)
	ca, err := certs.NewCA(certs.Options{})
	if err != nil {
		panic(err)
	}
	aggID, _ := ca.IssueParty("aggregator", certs.Options{})
	siteID, _ := ca.IssueParty("site-1", certs.Options{})
	session := transport.Session{Protocol: "demo", ID: []byte("run-1")}

	hub, err := transport.Listen(ctx, transport.ServerConfig{
		HubConfig: transport.HubConfig{Session: session, Roster: []string{"site-1"}, Logger: quiet},
		Address:   "127.0.0.1:0",
		Identity:  aggID,
	})
	if err != nil {
		panic(err)
	}
	defer hub.Close()
	site, err := transport.Dial(ctx, transport.ClientConfig{
		Address:  hub.Addr().String(),
		Server:   "aggregator",
		Identity: siteID,
		Session:  session,
		Logger:   quiet,
	})
	if err != nil {
		panic(err)
	}
	defer site.Close()
	if err := site.Send(ctx, transport.Envelope{Type: "hello", Payload: []byte("hi")}); err != nil {
		panic(err)
	}
	env := <-hub.Inbox()
	fmt.Printf("%s says %q\n", env.Sender, env.Payload)
	if err := hub.SendTo(ctx, "site-1", transport.Envelope{Type: "welcome"}); err != nil {
		panic(err)
	}
	got, err := site.Recv(ctx)
	if err != nil {
		panic(err)
	}
	fmt.Printf("%s got %q from %s\n", got.Recipient, got.Type, got.Sender)
	// Output:
	// site-1 says "hi"
	// site-1 got "welcome" from aggregator
}
