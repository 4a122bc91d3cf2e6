package mammamia

import (
	"context"
	"fmt"
	"strings"
	"time"

	pb "mammamia/v1"
)

// Decision is one decision the server asks of the seat, with its deadlines on this
// machine's clock (counted from the request's arrival, so that a clock out of step
// with the server's does not matter).
type Decision struct {
	// ID is the id to answer with.
	ID string
	// Resolve is true for a resolution decision (bake or decline the order
	// View.Deciding), false for a turn.
	Resolve bool
	// View is the seat's view when the decision was asked.
	View *pb.View
	// Options are every legal answer, in the canonical order; never empty. An answer
	// names one by its index.
	Options []*pb.Action
	// Deadline ends the decision's own time; past it the time bank runs.
	Deadline time.Time
	// DefaultAt is when the server stops waiting and applies the default action
	// (Deadline plus the time bank left).
	DefaultAt time.Time
	// TimeBank is what was left of the seat's time bank when the request was sent
	// (0 without one).
	TimeBank time.Duration
	// Request is the request as it came.
	Request *pb.DecisionRequest
}

// NewDecision returns the Decision of a request received at time received.
func NewDecision(request *pb.DecisionRequest, received time.Time) *Decision {
	return &Decision{
		ID:        request.GetDecisionId(),
		Resolve:   request.GetKind() == pb.DecisionKind_DECISION_KIND_RESOLVE,
		View:      request.GetView(),
		Options:   request.GetOptions(),
		Deadline:  received.Add(time.Duration(request.GetDeadlineMs()) * time.Millisecond),
		DefaultAt: received.Add(time.Duration(request.GetDefaultInMs()) * time.Millisecond),
		TimeBank:  time.Duration(request.GetTimeBankMs()) * time.Millisecond,
		Request:   request,
	}
}

// Left returns the time left until the server applies its default, less margin
// (the network's delay), and never below zero.
func (d *Decision) Left(margin time.Duration) time.Duration {
	left := time.Until(d.DefaultAt) - margin
	if left < 0 {
		return 0
	}
	return left
}

// Turns returns the indices of the options that are turns, in order.
func (d *Decision) Turns() []int {
	var indices []int
	for i, option := range d.Options {
		if option.GetTurn() != nil {
			indices = append(indices, i)
		}
	}
	return indices
}

// Answer is a strategy's choice: an index into Decision.Options, and a note (why),
// kept by the server as the answer's private note for the bot's owner.
type Answer struct {
	Option int
	Note   string
}

// Strategy chooses an answer to a decision. Its ctx ends when the decision's
// default is near (DefaultAt less a margin for the network); an answer outside
// Options is refused by the server and the next option tried instead.
type Strategy func(ctx context.Context, d *Decision) Answer

// NoteLimit is the most bytes of UTF-8 a note keeps on the server (ActRequest.note).
const NoteLimit = 1024

// fitNote returns text cut to NoteLimit bytes at a character boundary.
func fitNote(text string) string {
	if len(text) <= NoteLimit {
		return text
	}
	cut := 0
	for i := range text {
		if i > NoteLimit {
			break
		}
		cut = i
	}
	return text[:cut]
}

// Describe returns a short description of an option, for logs ("play 2 salami,
// order red-mixed, draw supply"; "bake, adding 1 olive"; "decline").
func Describe(action *pb.Action) string {
	if turn := action.GetTurn(); turn != nil {
		parts := []string{"pass"}
		if !turn.GetPass() {
			parts[0] = fmt.Sprintf("play %d %s", turn.GetCount(), turn.GetIngredient())
		}
		if turn.GetOrder() != "" {
			parts = append(parts, "order "+turn.GetOrder())
		}
		if turn.Draw != nil {
			parts = append(parts, "draw "+strings.ToLower(strings.TrimPrefix(turn.GetDraw().String(), "DRAW_SOURCE_")))
		}
		return strings.Join(parts, ", ")
	}
	if resolve := action.GetResolve(); resolve != nil {
		if !resolve.GetBake() {
			return "decline"
		}
		parts := []string{"bake"}
		if resolve.GetIngredient() != "" {
			parts = append(parts, "as "+resolve.GetIngredient())
		}
		var added []string
		for k, n := range CountsOf(resolve.GetHand()) {
			if n > 0 {
				added = append(added, fmt.Sprintf("%d %s", n, Ingredients[k]))
			}
		}
		if len(added) > 0 {
			parts = append(parts, "adding "+strings.Join(added, " + "))
		}
		return strings.Join(parts, ", ")
	}
	return "unknown action"
}
