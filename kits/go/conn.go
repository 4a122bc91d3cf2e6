// Package mammamia is a client library for the Mamma Mia! arena: connect to a
// server (plaintext or TLS), play a seat with resume and reconnection, enter the
// ladder and play its assignments, and decide with a typed view of each decision.
//
// The wire types are the generated package mammamia/v1 (imported as pb), built from
// protos/mammamia/v1/arena.proto; docs/protocol.md is the contract this follows.
package mammamia

import (
	"context"
	"crypto/tls"
	"fmt"
	"math/rand/v2"
	"os"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	pb "mammamia/v1"
)

// DialOptions say how to reach a server; the zero value is plaintext.
type DialOptions struct {
	// TLS connects with TLS, trusting the system's root certificates.
	TLS bool
	// CAFile connects with TLS, trusting the PEM certificates in this file instead.
	CAFile string
}

// Conn is a connection to one arena server, with its Seat and Ladder clients.
type Conn struct {
	// Address is the server's HOST:PORT.
	Address string
	// Seat and Ladder are the generated clients, for calls the library does not wrap.
	Seat   pb.SeatClient
	Ladder pb.LadderClient

	options DialOptions
	cc      *grpc.ClientConn
}

// Dial returns a connection to the server at address (HOST:PORT). The connection is
// made on first use, so Dial fails only for bad options (a CA file that cannot be
// read, an address gRPC cannot parse).
func Dial(address string, options DialOptions) (*Conn, error) {
	creds, err := transportCredentials(options)
	if err != nil {
		return nil, err
	}
	cc, err := grpc.NewClient(address, grpc.WithTransportCredentials(creds))
	if err != nil {
		return nil, fmt.Errorf("cannot connect to %s: %w", address, err)
	}
	return &Conn{
		Address: address,
		Seat:    pb.NewSeatClient(cc),
		Ladder:  pb.NewLadderClient(cc),
		options: options,
		cc:      cc,
	}, nil
}

// Redial returns a connection to another host with this connection's options (the
// same TLS roots), as an Assignment.host_address asks.
func (c *Conn) Redial(address string) (*Conn, error) {
	return Dial(address, c.options)
}

// Close closes the connection; calls in progress end with codes.Canceled.
func (c *Conn) Close() error {
	return c.cc.Close()
}

func transportCredentials(options DialOptions) (credentials.TransportCredentials, error) {
	switch {
	case options.CAFile != "":
		if _, err := os.Stat(options.CAFile); err != nil {
			return nil, fmt.Errorf("CA file: %w", err)
		}
		return credentials.NewClientTLSFromFile(options.CAFile, "")
	case options.TLS:
		return credentials.NewTLS(&tls.Config{MinVersion: tls.VersionTLS12}), nil
	default:
		return insecure.NewCredentials(), nil
	}
}

// withKey returns ctx carrying one metadata key (seat-token, bot-key).
func withKey(ctx context.Context, key, value string) context.Context {
	return metadata.AppendToOutgoingContext(ctx, key, value)
}

// Refused is the error of a call the server refused for good: no retry can change
// it (a wrong seat token or bot key, an unknown match, a taken name).
type Refused struct {
	Code    codes.Code
	Message string
}

func (r *Refused) Error() string {
	return fmt.Sprintf("%s: %s", r.Code, r.Message)
}

// retryable reports whether a call that failed with err may succeed later: the
// server restarting or draining, a dropped connection, load shed.
func retryable(err error) bool {
	switch status.Code(err) {
	case codes.Canceled, codes.Unknown, codes.DeadlineExceeded, codes.ResourceExhausted,
		codes.Aborted, codes.Internal, codes.Unavailable:
		return true
	}
	return false
}

// refusal returns err as a *Refused when it is a gRPC status, else err itself.
func refusal(err error) error {
	if s, ok := status.FromError(err); ok && s.Code() != codes.OK {
		return &Refused{Code: s.Code(), Message: s.Message()}
	}
	return err
}

// describeStatus returns "CODE: message" for a gRPC error, else its text.
func describeStatus(err error) string {
	if s, ok := status.FromError(err); ok {
		return fmt.Sprintf("%s: %s", s.Code(), s.Message())
	}
	return err.Error()
}

// Backoff returns the pause before reconnection attempt n (0 first): exponential
// from 100 ms, capped at 2 s, with jitter so that many bots do not retry in step.
func Backoff(n int) time.Duration {
	base := 2 * time.Second
	if n < 5 {
		base = 100 * time.Millisecond << n
	}
	return time.Duration(float64(base) * (0.5 + rand.Float64()/2))
}

// sleep waits d, or less when ctx ends; it returns ctx.Err() then.
func sleep(ctx context.Context, d time.Duration) error {
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-timer.C:
		return nil
	}
}

// retrier keeps a reconnection budget: how long the server has been away and how
// many attempts were made since the last message that proved the connection.
type retrier struct {
	budget       time.Duration
	failingSince time.Time
	attempt      int
}

// reset starts the budget afresh (a message came).
func (r *retrier) reset() {
	r.failingSince = time.Time{}
	r.attempt = 0
}

// next returns the pause before the next attempt, or an error naming the last
// failure when the server has been away longer than the budget.
func (r *retrier) next(failure string) (time.Duration, error) {
	if r.failingSince.IsZero() {
		r.failingSince = time.Now()
	}
	if r.budget > 0 && time.Since(r.failingSince) > r.budget {
		return 0, fmt.Errorf("gave up after %s without the server (%s)", r.budget.Round(time.Second), failure)
	}
	pause := Backoff(r.attempt)
	r.attempt++
	return pause, nil
}
