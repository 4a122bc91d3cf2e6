package mammamia

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"io"
	"log/slog"
	"strings"
	"time"

	"google.golang.org/grpc"

	pb "mammamia/v1"
)

// BatchMS is the batching bound every stream asks for (ObserveRequest.batch_ms): the
// others' turns may wait for the seat's next decision (or a second) instead of
// costing the server a message each.
const BatchMS = 1000

// SeatOptions say how seats are played.
type SeatOptions struct {
	// Name is the bot's name, sent with Join (a ladder match shows the ladder's name).
	Name string
	// Strategy decides; it is required.
	Strategy Strategy
	// Log gets one line per decision and per connection event; nil logs nothing.
	Log *slog.Logger
	// RetryFor is how long the server may stay away before the seat is given up
	// (0: 60 s).
	RetryFor time.Duration
	// Margin is kept between a strategy's context deadline and the decision's
	// default, for the network (0: 250 ms).
	Margin time.Duration
}

func (o SeatOptions) withDefaults() SeatOptions {
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	if o.RetryFor == 0 {
		o.RetryFor = 60 * time.Second
	}
	if o.Margin == 0 {
		o.Margin = 250 * time.Millisecond
	}
	return o
}

// Result is how a match ended for the seat (MatchEnded).
type Result struct {
	MatchID string
	// Status is MATCH_STATUS_FINISHED or MATCH_STATUS_ABORTED.
	Status pb.MatchStatus
	// Winners are the winning seats; Delivered and Ranks are per seat, in seat order.
	Winners   []uint32
	Delivered []uint32
	Ranks     []uint32
	// View is the seat's final view; its Seat is the seat played.
	View *pb.View
	// Reason says why an aborted match was cut off.
	Reason string
}

// Finished reports whether the match was played to its end (not aborted).
func (r *Result) Finished() bool {
	return r.Status == pb.MatchStatus_MATCH_STATUS_FINISHED
}

// Progress is where a seat's play stands, carried from one call to the next: the
// highest sequence number seen (resume after it), whether a server has taken the
// seat, the client seed, and the reconnection budget.
type Progress struct {
	LastSequence uint64
	Joined       bool
	// ClientSeed is mixed into the deal with the server's committed seed
	// (docs/fairness.md); kept, so that every Join and sit of the seat gives the same.
	ClientSeed string
	retry      retrier
}

// NewProgress returns the progress of a seat not played yet, with a fresh client seed.
func NewProgress() *Progress {
	seed := make([]byte, 16)
	_, _ = rand.Read(seed) // crypto/rand.Read never fails on supported platforms
	return &Progress{ClientSeed: hex.EncodeToString(seed)}
}

// PlaySeat plays the seat of token to the end of its match: Join, then a Play
// stream, reconnecting with backoff after a dropped connection (or UNAVAILABLE) and
// resuming after the last sequence seen, answering the open decision a Snapshot
// carries. It returns the match's end; a *Refused error when the server refuses the
// seat for good (a wrong token, an unknown match); an error naming the last failure
// when the server stays away for RetryFor; ctx.Err() when ctx ends first.
func (c *Conn) PlaySeat(ctx context.Context, token string, options SeatOptions) (*Result, error) {
	return c.playSeat(ctx, token, options.withDefaults(), NewProgress())
}

func (c *Conn) playSeat(ctx context.Context, token string, o SeatOptions, progress *Progress) (*Result, error) {
	progress.retry.budget = o.RetryFor
	for {
		failure := "stream closed before the match ended"
		joined, err := c.Seat.Join(withKey(ctx, "seat-token", token),
			&pb.JoinRequest{Name: o.Name, ClientSeed: progress.ClientSeed})
		if err == nil {
			log := o.Log.With("match", joined.GetMatchId(), "seat", joined.GetSeat())
			event := "joined"
			if progress.Joined {
				event = "rejoined"
			}
			log.Info(event, "colour", joined.GetColour(), "players", joined.GetPlayers(),
				"after_sequence", progress.LastSequence)
			progress.Joined = true
			var result *Result
			result, err = c.play(ctx, token, o, log, progress)
			if result != nil {
				return result, nil
			}
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if err != nil {
			if !retryable(err) {
				return nil, refusal(err)
			}
			failure = describeStatus(err)
		}
		pause, err := progress.retry.next(failure)
		if err != nil {
			return nil, err
		}
		o.Log.Warn("reconnecting", "reason", failure, "pause_ms", pause.Milliseconds(),
			"after_sequence", progress.LastSequence)
		if sleep(ctx, pause) != nil {
			return nil, ctx.Err()
		}
	}
}

// play returns the match's end on a new Play call of the seat, or nil and the
// call's error (nil when it closed before the end).
func (c *Conn) play(ctx context.Context, token string, o SeatOptions, log *slog.Logger, progress *Progress) (*Result, error) {
	callCtx, cancel := context.WithCancel(withKey(ctx, "seat-token", token))
	defer cancel() // ends the call whatever happened
	stream, err := c.Seat.Play(callCtx)
	if err != nil {
		return nil, err
	}
	first := &pb.PlayRequest{Message: &pb.PlayRequest_Observe{
		Observe: &pb.ObserveRequest{AfterSequence: progress.LastSequence, BatchMs: BatchMS},
	}}
	result, err := follow(ctx, stream, first, o, log, progress)
	if result != nil {
		_ = stream.CloseSend()
	}
	return result, err
}

type playStream = grpc.BidiStreamingClient[pb.PlayRequest, pb.SeatEvents]

// follow sends first (observe on Play, sit on PlayMatches) and plays the seat's
// stream until its match_ended, which it returns; the call is left as it is (open,
// for PlayMatches). It returns nil and the stream's error when the stream broke, nil
// and nil when it closed before the end.
func follow(ctx context.Context, stream playStream, first *pb.PlayRequest, o SeatOptions, log *slog.Logger, progress *Progress) (*Result, error) {
	f := &follower{ctx: ctx, stream: stream, o: o, log: log, progress: progress, seat: -1}
	f.send(first)
	for {
		message, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			return nil, nil
		}
		if err != nil {
			return nil, err
		}
		received := time.Now()
		for _, event := range message.GetEvents() {
			if result := f.handle(event, received); result != nil {
				return result, nil
			}
		}
	}
}

// follower is one seat's side of a stream: the open decision (only one of a match
// is open at a time) and the options already sent for it.
type follower struct {
	ctx      context.Context
	stream   playStream
	o        SeatOptions
	log      *slog.Logger
	progress *Progress
	seat     int64
	open     *Decision
	tried    map[int]bool
}

// send writes a message; a failed send is not reported here because the stream's
// status then comes from Recv (grpc-go returns io.EOF from Send for it).
func (f *follower) send(message *pb.PlayRequest) {
	_ = f.stream.Send(message)
}

// handle applies one event; it returns the match's end at match_ended, else nil.
func (f *follower) handle(event *pb.SeatEvent, received time.Time) *Result {
	f.progress.retry.reset() // any event proves the connection
	if event.GetSequence() > f.progress.LastSequence {
		f.progress.LastSequence = event.GetSequence()
	}
	switch e := event.GetEvent().(type) {
	case *pb.SeatEvent_Snapshot:
		snapshot := e.Snapshot
		f.log.Info("snapshot", "status", statusWord(snapshot.GetStatus()), "sequence", event.GetSequence(),
			"missed", len(snapshot.GetHistory()), "open_decision", snapshot.GetDecision().GetDecisionId())
		if snapshot.GetView().Seat != nil {
			f.seat = int64(snapshot.GetView().GetSeat())
		}
		f.open = nil
		f.progress.Joined = true // the server has taken the seat: a Join now is a rejoin
		for _, missed := range snapshot.GetHistory() {
			if missed.GetSequence() > f.progress.LastSequence {
				f.progress.LastSequence = missed.GetSequence()
			}
			if passed := missed.GetDeadlinePassed(); passed != nil {
				f.deadlinePassed(passed)
			}
		}
		if snapshot.GetDecision() != nil {
			f.decide(snapshot.GetDecision(), received)
		}
	case *pb.SeatEvent_Decision:
		f.decide(e.Decision, received)
	case *pb.SeatEvent_ActResult:
		f.actResult(e.ActResult)
	case *pb.SeatEvent_DeadlinePassed:
		f.deadlinePassed(e.DeadlinePassed)
	case *pb.SeatEvent_MatchEnded:
		ended := e.MatchEnded
		f.log.Info("match_ended", "status", statusWord(ended.GetStatus()), "winners", ended.GetWinners(),
			"delivered", ended.GetDelivered(), "ranks", ended.GetRanks(), "reason", ended.GetReason())
		return &Result{
			Status: ended.GetStatus(), Winners: ended.GetWinners(), Delivered: ended.GetDelivered(),
			Ranks: ended.GetRanks(), View: ended.GetView(), Reason: ended.GetReason(),
		}
	}
	return nil // turns, rounds and resolutions: the next decision's view holds them
}

// decide asks the strategy and answers, within the decision's time less the margin.
func (f *follower) decide(request *pb.DecisionRequest, received time.Time) {
	d := NewDecision(request, received)
	f.open, f.tried = d, map[int]bool{}
	ctx, cancel := context.WithDeadline(f.ctx, d.DefaultAt.Add(-f.o.Margin))
	answer := f.o.Strategy(ctx, d)
	cancel()
	if answer.Option < 0 || answer.Option >= len(d.Options) {
		f.log.Warn("no_such_option", "decision", d.ID, "option", answer.Option, "of", len(d.Options))
		answer = Answer{Option: 0, Note: "the strategy's option was out of range"}
	}
	f.answer(answer)
}

func (f *follower) answer(answer Answer) {
	d := f.open
	f.tried[answer.Option] = true
	// The note goes up as the answer's private note, for the bot's owner alone.
	f.send(&pb.PlayRequest{Message: &pb.PlayRequest_Act{Act: &pb.ActRequest{
		DecisionId: d.ID, Choice: &pb.ActRequest_Option{Option: uint32(answer.Option)}, Note: fitNote(answer.Note),
	}}})
	kind := "turn"
	if d.Resolve {
		kind = "resolve"
	}
	f.log.Info("decision", "decision", d.ID, "kind", kind, "round", d.View.GetRound(),
		"option", answer.Option, "of", len(d.Options), "choice", Describe(d.Options[answer.Option]),
		"reason", answer.Note, "default_in_ms", d.Request.GetDefaultInMs())
}

// actResult follows the reply to an answer: a refusal that leaves the decision open
// (an option that is not there, or not legal now) is answered with an option not
// tried yet; any other refusal means the decision is closed.
func (f *follower) actResult(result *pb.ActResult) {
	mine := f.open != nil && f.open.ID == result.GetDecisionId()
	if result.GetAccepted() {
		if mine {
			f.open = nil
		}
		return
	}
	f.log.Warn("answer_refused", "decision", result.GetDecisionId(), "refusal", result.GetRefusal().String(),
		"rule", result.GetRule(), "message", result.GetMessage())
	if mine {
		switch result.GetRefusal() {
		case pb.Refusal_REFUSAL_ILLEGAL, pb.Refusal_REFUSAL_NO_SUCH_OPTION:
			for i := range f.open.Options {
				if !f.tried[i] {
					f.answer(Answer{Option: i, Note: "previous answer refused"})
					return
				}
			}
		}
		f.open = nil
	}
}

// deadlinePassed closes the open decision when the server decided it.
func (f *follower) deadlinePassed(passed *pb.DeadlinePassed) {
	if int64(passed.GetSeat()) != f.seat {
		return
	}
	f.log.Warn("deadline_passed", "decision", passed.GetDecisionId(), "reason", passed.GetReason().String(),
		"strikes", passed.GetStrikes(), "autopilot", passed.GetAutopilot())
	if f.open != nil && f.open.ID == passed.GetDecisionId() {
		f.open = nil
	}
}

// statusWord returns MATCH_STATUS_FINISHED as "finished".
func statusWord(status pb.MatchStatus) string {
	return strings.ToLower(strings.TrimPrefix(status.String(), "MATCH_STATUS_"))
}
