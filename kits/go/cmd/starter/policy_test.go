package main

import (
	"context"
	"io"
	"testing"
	"time"

	"mammamia"
	pb "mammamia/v1"
)

func turn(ingredient string, count uint32, order string, draw pb.DrawSource) *pb.Action {
	t := &pb.TurnAction{Ingredient: ingredient, Count: count, Order: order, Pass: ingredient == ""}
	if draw != pb.DrawSource_DRAW_SOURCE_UNSPECIFIED {
		t.Draw = &draw
	}
	return &pb.Action{Kind: &pb.Action_Turn{Turn: t}}
}

const (
	supply = pb.DrawSource_DRAW_SOURCE_SUPPLY
	waiter = pb.DrawSource_DRAW_SOURCE_WAITER
)

func decide(view *pb.View, options ...*pb.Action) mammamia.Answer {
	request := &pb.DecisionRequest{DecisionId: "d1", Kind: pb.DecisionKind_DECISION_KIND_TURN, View: view, Options: options}
	if options[0].GetResolve() != nil {
		request.Kind = pb.DecisionKind_DECISION_KIND_RESOLVE
	}
	return choose(context.Background(), mammamia.NewDecision(request, time.Now()))
}

func TestATurnPlaysAnOrderTheOvenSufficesFor(t *testing.T) {
	view := &pb.View{
		Oven:       []string{"salami", "salami", "salami", "pepper"},
		Hand:       &pb.IngredientCounts{Salami: 2, Olive: 4},
		HandOrders: []string{"green-salami", "red-mixed"},
	}
	answer := decide(view,
		turn("salami", 1, "", supply),
		turn("salami", 1, "green-salami", waiter), // suffices, but the wrong refill
		turn("salami", 1, "green-salami", supply), // suffices, one order left: supply
		turn("salami", 2, "green-salami", supply),
		turn("olive", 4, "", supply),
	)
	if answer.Option != 2 || answer.Note != "oven suffices for green-salami" {
		t.Errorf("answer %+v", answer)
	}
}

func TestATurnFeedsTheMostPlentifulIngredientKeepingTwoOrders(t *testing.T) {
	view := &pb.View{Hand: &pb.IngredientCounts{Salami: 2, Olive: 3}, HandOrders: []string{"red-mixed"}}
	answer := decide(view,
		turn("salami", 2, "", supply),
		turn("olive", 1, "", supply),
		turn("olive", 3, "", waiter),
		turn("olive", 3, "", supply),
		turn("olive", 3, "red-mixed", waiter),
	)
	if answer.Option != 3 || answer.Note != "most plentiful ingredient is olive" {
		t.Errorf("answer %+v", answer)
	}
	// With no order in hand the wanted refill is the waiter.
	view.HandOrders = nil
	if answer := decide(view, turn("olive", 3, "", supply), turn("olive", 3, "", waiter)); answer.Option != 1 {
		t.Errorf("answer %+v", answer)
	}
}

func TestATurnWithNoIngredientPasses(t *testing.T) {
	view := &pb.View{HandOrders: []string{"red-mixed", "green-olive"}}
	if answer := decide(view, turn("", 0, "", waiter), turn("", 0, "", supply)); answer.Option != 1 {
		t.Errorf("answer %+v", answer)
	}
}

func TestAResolutionBakesWithTheFewestCardsElseDeclines(t *testing.T) {
	resolve := func(bake bool, hand *pb.IngredientCounts) *pb.Action {
		return &pb.Action{Kind: &pb.Action_Resolve{Resolve: &pb.ResolveAction{Bake: bake, Hand: hand}}}
	}
	view := &pb.View{Deciding: "red-bombastica"}
	answer := decide(view,
		resolve(true, &pb.IngredientCounts{Salami: 2}),
		resolve(true, &pb.IngredientCounts{Olive: 1}),
		resolve(false, nil),
	)
	if answer.Option != 1 || answer.Note != "bake red-bombastica" {
		t.Errorf("answer %+v", answer)
	}
	if answer := decide(view, resolve(false, nil)); answer.Option != 0 || answer.Note != "cannot bake red-bombastica" {
		t.Errorf("answer %+v", answer)
	}
}

func TestTheCommandLineIsChecked(t *testing.T) {
	t.Setenv("MAMMAMIA_SERVER", "")
	t.Setenv("MAMMAMIA_SEAT_TOKEN", "")
	ok := [][]string{
		{"--server", "h:1", "--token", "-starts-with-a-dash"},
		{"--server", "h:1", "--ladder", "--name", "n", "--key-file", "k", "--version", "v1.2+x"},
	}
	for _, args := range ok {
		if _, err := parse(args, io.Discard); err != nil {
			t.Errorf("parse(%q): %v", args, err)
		}
	}
	if s, _ := parse(ok[0], io.Discard); s.token != "-starts-with-a-dash" || s.name != "go-starter" {
		t.Errorf("settings %+v", s)
	}
	bad := [][]string{
		{"--token", "t"},
		{"--server", "h:1"},
		{"--server", "h:1", "--ladder", "--name", "n"},
		{"--server", "h:1", "--ladder", "--key-file", "k"},
		{"--server", "h:1", "--ladder", "--name", "n", "--key-file", "k", "--version", "no spaces"},
		{"--server", "h:1", "--token", "t", "--key-file", "k"},
		{"--server", "h:1", "--token", "t", "extra"},
	}
	for _, args := range bad {
		if _, err := parse(args, io.Discard); err == nil {
			t.Errorf("parse(%q) accepted", args)
		}
	}
}
