package main

import (
	"context"
	"fmt"

	"mammamia"
	pb "mammamia/v1"
)

// choose is the starter bot's strategy, the reference choice of docs/protocol.md
// ("The reference bot's choice"): a turn plays an order the public oven suffices
// for, spending the fewest cards, else all its cards of its most plentiful
// ingredient without an order, refilling from the waiter when no order card would be
// left in hand (so that two orders stay in hand) and else from the supply; a
// resolution bakes whenever it can, adding the fewest cards from hand.
func choose(_ context.Context, d *mammamia.Decision) mammamia.Answer {
	if d.Resolve {
		return chooseResolve(d)
	}
	return chooseTurn(d)
}

// candidate is an option with the key it is ranked by (smallest first, element by
// element; the first option wins a tie).
type candidate struct {
	index int
	key   []int
}

func best(candidates []candidate) int {
	winner := candidates[0]
	for _, c := range candidates[1:] {
		for i := range c.key {
			if c.key[i] != winner.key[i] {
				if c.key[i] < winner.key[i] {
					winner = c
				}
				break
			}
		}
	}
	return winner.index
}

func chooseTurn(d *mammamia.Decision) mammamia.Answer {
	view := d.View
	hand := mammamia.CountsOf(view.GetHand())
	orders := len(view.GetHandOrders())
	var suffice, feed, passes []candidate
	// The most plentiful ingredient in hand, the first in canonical order on a tie.
	plentiful := 0
	for k := range hand {
		if hand[k] > hand[plentiful] {
			plentiful = k
		}
	}
	for _, i := range d.Turns() {
		turn := d.Options[i].GetTurn()
		left := orders
		if turn.GetOrder() != "" {
			left--
		}
		draw := drawRank(turn, left)
		switch {
		case turn.GetOrder() != "" && mammamia.OvenSuffices(view.GetOven(), turn.GetOrder(), turn.GetIngredient(), int(turn.GetCount())):
			suffice = append(suffice, candidate{i, []int{int(turn.GetCount()), draw}})
		case turn.GetOrder() == "" && !turn.GetPass() && turn.GetIngredient() == mammamia.Ingredients[plentiful]:
			feed = append(feed, candidate{i, []int{-int(turn.GetCount()), draw}})
		case turn.GetPass():
			passes = append(passes, candidate{i, []int{draw}})
		}
	}
	switch {
	case len(suffice) > 0:
		i := best(suffice)
		return mammamia.Answer{Option: i, Note: "oven suffices for " + d.Options[i].GetTurn().GetOrder()}
	case len(feed) > 0:
		return mammamia.Answer{Option: best(feed), Note: "most plentiful ingredient is " + mammamia.Ingredients[plentiful]}
	case len(passes) > 0:
		return mammamia.Answer{Option: best(passes), Note: "no ingredient in hand"}
	}
	return mammamia.Answer{Option: 0, Note: "first option"}
}

// drawRank returns 0 when a turn refills from the wanted source (the waiter when no
// order card would be left in hand, else the supply) or draws nothing, else 1.
func drawRank(turn *pb.TurnAction, ordersLeft int) int {
	wanted := pb.DrawSource_DRAW_SOURCE_SUPPLY
	if ordersLeft <= 0 {
		wanted = pb.DrawSource_DRAW_SOURCE_WAITER
	}
	if turn.Draw == nil || turn.GetDraw() == wanted {
		return 0
	}
	return 1
}

func chooseResolve(d *mammamia.Decision) mammamia.Answer {
	var bakes []candidate
	decline := -1
	for i, option := range d.Options {
		resolve := option.GetResolve()
		switch {
		case resolve == nil:
		case resolve.GetBake():
			bakes = append(bakes, candidate{i, []int{mammamia.CountsOf(resolve.GetHand()).Total()}})
		case decline < 0:
			decline = i
		}
	}
	if len(bakes) > 0 {
		return mammamia.Answer{Option: best(bakes), Note: "bake " + d.View.GetDeciding()}
	}
	return mammamia.Answer{Option: max(decline, 0), Note: fmt.Sprintf("cannot bake %s", d.View.GetDeciding())}
}
