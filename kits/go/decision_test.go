package mammamia

import (
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	pb "mammamia/v1"
)

func TestNewDecisionCountsItsDeadlinesFromArrival(t *testing.T) {
	received := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	d := NewDecision(&pb.DecisionRequest{
		DecisionId: "d7", Kind: pb.DecisionKind_DECISION_KIND_RESOLVE,
		DeadlineMs: 1500, TimeBankMs: 4000, DefaultInMs: 5500,
		Options: []*pb.Action{{Kind: &pb.Action_Resolve{Resolve: &pb.ResolveAction{}}}},
	}, received)
	if d.ID != "d7" || !d.Resolve || len(d.Options) != 1 {
		t.Fatalf("decision %+v", d)
	}
	if d.Deadline != received.Add(1500*time.Millisecond) || d.DefaultAt != received.Add(5500*time.Millisecond) {
		t.Errorf("deadline %v, default at %v", d.Deadline, d.DefaultAt)
	}
	if d.TimeBank != 4*time.Second {
		t.Errorf("time bank %v", d.TimeBank)
	}
	if left := d.Left(0); left != 0 {
		t.Errorf("a decision of 2026 has %v left", left)
	}
}

func TestFitNoteCutsAtACharacterBoundary(t *testing.T) {
	short := "bake red-mixed"
	if fitNote(short) != short {
		t.Error("a short note was cut")
	}
	long := strings.Repeat("é", NoteLimit) // 2 bytes each
	cut := fitNote(long)
	if len(cut) != NoteLimit || !utf8.ValidString(cut) {
		t.Errorf("cut to %d bytes, valid %v", len(cut), utf8.ValidString(cut))
	}
	odd := "x" + long
	if cut := fitNote(odd); len(cut) != NoteLimit-1 || !utf8.ValidString(cut) {
		t.Errorf("cut to %d bytes, valid %v", len(cut), utf8.ValidString(cut))
	}
}

func TestBackoffGrowsToTwoSecondsWithJitter(t *testing.T) {
	for n, top := range []time.Duration{100, 200, 400, 800, 1600, 2000, 2000, 2000} {
		top *= time.Millisecond
		for range 20 {
			if pause := Backoff(n); pause < top/2 || pause > top {
				t.Fatalf("Backoff(%d) = %v, outside [%v, %v]", n, pause, top/2, top)
			}
		}
	}
}

func TestDescribeNamesTheAction(t *testing.T) {
	supply := pb.DrawSource_DRAW_SOURCE_SUPPLY
	turn := &pb.Action{Kind: &pb.Action_Turn{Turn: &pb.TurnAction{
		Ingredient: "salami", Count: 2, Order: "red-mixed", Draw: &supply,
	}}}
	if got := Describe(turn); got != "play 2 salami, order red-mixed, draw supply" {
		t.Errorf("Describe(turn) = %q", got)
	}
	bake := &pb.Action{Kind: &pb.Action_Resolve{Resolve: &pb.ResolveAction{
		Bake: true, Ingredient: "pepper", Hand: &pb.IngredientCounts{Olive: 1},
	}}}
	if got := Describe(bake); got != "bake, as pepper, adding 1 olive" {
		t.Errorf("Describe(bake) = %q", got)
	}
}
