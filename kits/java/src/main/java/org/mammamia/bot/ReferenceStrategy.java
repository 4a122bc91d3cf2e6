package org.mammamia.bot;

import java.util.Comparator;
import java.util.List;
import java.util.function.ToIntFunction;
import org.mammamia.kit.Decision;
import org.mammamia.kit.Ingredient;
import org.mammamia.kit.Option;
import org.mammamia.kit.Recipes;
import org.mammamia.kit.SeatView;
import org.mammamia.kit.Strategy;

/**
 * The reference bot's choice (docs/protocol.md, "The reference bot's choice"), the same
 * answers as the Node.js bot's: simple, not random, from the decision's view and options.
 *
 * <p>A turn plays an order when the public oven suffices for it, spending as few cards as
 * it can; otherwise it plays all its cards of its most plentiful ingredient, keeping its
 * orders. The refill comes from the waiter when no order card would be left in hand, else
 * from the supply. A resolution bakes whenever an option bakes, adding the fewest cards
 * from hand; otherwise it declines.
 */
public final class ReferenceStrategy implements Strategy {

  @Override
  public Choice choose(Decision decision) {
    return decision.isTurn() ? turn(decision) : resolve(decision);
  }

  private static Choice turn(Decision decision) {
    SeatView view = decision.view();
    List<Option> turns = decision.options().stream().filter(Option::isTurn).toList();
    if (turns.isEmpty()) {
      return new Choice(0, "no turn among the options");
    }
    int ordersInHand = view.handOrders().size();
    // The refill wanted: the waiter when no order card would be left in hand.
    ToIntFunction<Option> drawRank =
        option -> {
          int ordersLeft = ordersInHand - (option.order() != null ? 1 : 0);
          Option.Draw wanted = ordersLeft > 0 ? Option.Draw.SUPPLY : Option.Draw.WAITER;
          return option.draw() == Option.Draw.NONE || option.draw() == wanted ? 0 : 1;
        };

    // An order the oven already suffices for: fewest cards spent, then the wanted refill.
    List<Option> playable =
        turns.stream()
            .filter(
                o ->
                    o.order() != null
                        && Recipes.ovenSuffices(view.oven(), o.order(), o.ingredient(), o.count()))
            .toList();
    if (!playable.isEmpty()) {
      Option best = first(playable, Comparator.comparingInt(Option::count).thenComparingInt(drawRank));
      return Choice.of(best, "oven suffices for " + best.order());
    }

    // Otherwise feed the oven with the most plentiful ingredient, keeping the orders.
    Ingredient plentiful = view.hand().mostPlentiful();
    List<Option> feeding =
        turns.stream()
            .filter(o -> o.order() == null && !o.isPass() && o.ingredient() == plentiful)
            .toList();
    if (!feeding.isEmpty()) {
      Option best =
          first(feeding, Comparator.comparingInt((Option o) -> -o.count()).thenComparingInt(drawRank));
      return Choice.of(best, "most plentiful ingredient is " + plentiful);
    }
    List<Option> passes = turns.stream().filter(Option::isPass).toList();
    if (!passes.isEmpty()) {
      return Choice.of(first(passes, Comparator.comparingInt(drawRank)), "no ingredient in hand");
    }
    return Choice.of(turns.get(0), "first option");
  }

  private static Choice resolve(Decision decision) {
    List<Option> options = decision.options();
    List<Option> bakes = options.stream().filter(Option::bakes).toList();
    String order = decision.view().deciding();
    if (!bakes.isEmpty()) {
      Option best = first(bakes, Comparator.comparingInt(o -> o.fromHand().total()));
      return Choice.of(best, "bake " + order);
    }
    Option decline =
        options.stream().filter(o -> !o.isTurn() && !o.bakes()).findFirst().orElse(options.get(0));
    return Choice.of(decline, "cannot bake " + order);
  }

  /** Returns the first option with the smallest key under {@code order}. */
  private static Option first(List<Option> options, Comparator<Option> order) {
    Option best = options.get(0);
    for (Option option : options) {
      if (order.compare(option, best) < 0) {
        best = option;
      }
    }
    return best;
  }
}
