package mammamia

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	pb "mammamia/v1"
)

// ErrReplaced is returned by PlayLadder when a newer entry of the same bot took
// over (Enter ended with ALREADY_EXISTS): one copy of a bot is on the ladder at a
// time, and this one must not enter again.
var ErrReplaced = errors.New("a newer entry of this bot took over the ladder")

// Register registers a new bot name and returns its secret key (the server shows it
// only once). A *Refused error with codes.AlreadyExists when the name is taken, or
// codes.FailedPrecondition while registration is closed.
func (c *Conn) Register(ctx context.Context, name string) (string, error) {
	response, err := c.Ladder.Register(ctx, &pb.RegisterRequest{Name: name})
	if err != nil {
		return "", refusal(err)
	}
	return response.GetKey(), nil
}

// LadderOptions say how a bot plays the ladder.
type LadderOptions struct {
	// Name and Key are the registered bot's; Version is the version that enters
	// (each version is rated on its own; "": the default version).
	Name    string
	Key     string
	Version string
	// Seat says how each assigned seat is played (Seat.Name is set to Name).
	Seat SeatOptions
	// Matches leaves the ladder after this many assignments (0: never), once their
	// matches have ended.
	Matches int
}

// PlayLadder enters the ladder and plays every Assignment while staying on the Enter
// stream for the next: each on its host (Assignment.host_address, with this
// connection's credentials), on one PlayMatches call per host when that call is
// free, else (busy with another match, broken mid-match, or a server without it) on
// Join and Play, resumed from the last sequence seen. It enters again with backoff
// after a broken stream. It returns the number of matches played to their end, with
// nil when ctx ended (the matches in progress are dropped) or after
// LadderOptions.Matches assignments; ErrReplaced when a newer entry took over; a
// *Refused error for a refused key (codes.Unauthenticated, codes.PermissionDenied:
// also a suspended bot); an error naming the last failure when the server stayed
// away for Seat.RetryFor. Matches in progress are played to their end before it
// returns, unless ctx ended.
func (c *Conn) PlayLadder(ctx context.Context, options LadderOptions) (int, error) {
	o := options.Seat.withDefaults()
	o.Name = options.Name
	log := o.Log
	leaveCtx, leave := context.WithCancel(ctx)
	defer leave()

	hosts := &hosts{home: c, byAddress: map[string]*Conn{}, tables: map[*Conn]*table{}}
	defer hosts.close()
	var running sync.WaitGroup
	var played atomic.Int64
	assigned := 0
	retry := retrier{budget: o.RetryFor}
	var final error

	for leaveCtx.Err() == nil {
		failure := "ladder stream closed"
		stream, err := c.Ladder.Enter(withKey(leaveCtx, "bot-key", options.Key),
			&pb.EnterRequest{Name: options.Name, Version: options.Version})
		if err == nil {
			// The response headers come once the entry is recorded (none: the call
			// failed first, and Recv says how): the reconnection budget starts afresh.
			if header, herr := stream.Header(); herr == nil && header != nil {
				retry.reset()
				log.Info("entered", "version", options.Version)
			}
		}
		for err == nil {
			var assignment *pb.Assignment
			assignment, err = stream.Recv()
			if err != nil {
				break
			}
			retry.reset()
			if assignment.GetMatchId() == "" {
				// A notice of why the bot waits (the ladder paused): it stays entered.
				log.Info("ladder_notice", "notice", assignment.GetWaiting())
				continue
			}
			assigned++
			number := assigned
			running.Add(1)
			go func() {
				defer running.Done()
				if hosts.playAssigned(ctx, assignment, number, o) {
					played.Add(1)
				}
			}()
			if options.Matches > 0 && assigned >= options.Matches {
				leave()
			}
		}
		if leaveCtx.Err() != nil {
			break
		}
		switch code := status.Code(err); {
		case errors.Is(err, io.EOF):
			log.Info("ladder_closed")
		case code == codes.AlreadyExists:
			final = ErrReplaced
		case !retryable(err):
			final = fmt.Errorf("ladder refused %q: %w", options.Name, refusal(err))
		default:
			failure = describeStatus(err)
		}
		if final != nil {
			break
		}
		pause, err := retry.next(failure)
		if err != nil {
			final = err
			break
		}
		log.Warn("reentering", "reason", failure, "pause_ms", pause.Milliseconds())
		_ = sleep(leaveCtx, pause)
	}
	leave()
	log.Info("left_ladder", "assigned", assigned, "why", leaving(ctx, final))
	running.Wait()
	return int(played.Load()), final
}

// leaving returns why the bot left the ladder, for the log.
func leaving(ctx context.Context, final error) string {
	switch {
	case final != nil:
		return final.Error()
	case ctx.Err() != nil:
		return "stopped"
	}
	return "its matches were assigned"
}

// hosts are the connections a ladder bot plays on: the one it entered through and
// one per other host an assignment names, each with its PlayMatches table.
type hosts struct {
	home      *Conn
	mu        sync.Mutex
	byAddress map[string]*Conn
	tables    map[*Conn]*table
}

// at returns the connection and table for an assignment's host_address ("": home).
func (h *hosts) at(address string) (*Conn, *table, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	conn := h.home
	if address != "" && address != h.home.Address {
		conn = h.byAddress[address]
		if conn == nil {
			var err error
			if conn, err = h.home.Redial(address); err != nil {
				return nil, nil, err
			}
			h.byAddress[address] = conn
		}
	}
	t := h.tables[conn]
	if t == nil {
		t = &table{conn: conn}
		h.tables[conn] = t
	}
	return conn, t, nil
}

// close drops the tables and closes the other hosts' connections.
func (h *hosts) close() {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, t := range h.tables {
		t.drop()
	}
	for _, conn := range h.byAddress {
		_ = conn.Close()
	}
}

// playAssigned plays one assigned seat to its end and reports whether it ended
// (finished or aborted) rather than being given up or stopped.
func (h *hosts) playAssigned(ctx context.Context, assignment *pb.Assignment, number int, o SeatOptions) bool {
	log := o.Log.With("match", assignment.GetMatchId(), "seat", assignment.GetSeat())
	conn, t, err := h.at(assignment.GetHostAddress())
	if err != nil {
		log.Error("seat_lost", "reason", err.Error())
		return false
	}
	log.Info("assigned", "players", assignment.GetPlayers(), "assignment", number, "host", conn.Address)
	o.Log = log
	progress := NewProgress()
	progress.retry.budget = o.RetryFor
	if t.take() {
		result, err := t.play(ctx, ctx, assignment.GetSeatToken(), o, log, progress)
		t.release()
		switch {
		case result != nil:
			return true
		case ctx.Err() != nil:
			return false
		case err == nil:
			log.Warn("stream_closed", "call", "PlayMatches", "after_sequence", progress.LastSequence)
		case status.Code(err) == codes.Unimplemented:
			// A server older than PlayMatches: a Play call per match from now on.
			t.markUnsupported()
			log.Info("play_matches_unsupported", "server", conn.Address)
		case !retryable(err):
			log.Error("seat_lost", "reason", describeStatus(err))
			return false
		default:
			log.Warn("connection_lost", "call", "PlayMatches", "reason", describeStatus(err),
				"after_sequence", progress.LastSequence)
		}
	}
	// Resumed (or, with the table busy, played) on a Play call of its own.
	if _, err := conn.playSeat(ctx, assignment.GetSeatToken(), o, progress); err != nil {
		if ctx.Err() == nil {
			log.Error("seat_lost", "reason", err.Error())
		}
		return false
	}
	return true
}
