package org.mammamia.kit;

import java.util.List;
import org.mammamia.v1.Phase;
import org.mammamia.v1.SeatInfo;
import org.mammamia.v1.View;

/**
 * A seat's view of the game (R-VIEW-1..4), typed: what the decision's {@code view}
 * holds, with ingredient counts as {@link Counts}. {@link #wire()} gives the message
 * itself for anything not offered here.
 */
public record SeatView(View wire) {

  /** Returns the viewer's seat (0-based), or -1 for a spectator. */
  public int seat() {
    return wire.hasSeat() ? wire.getSeat() : -1;
  }

  /** Returns the number of players, 2 to 5. */
  public int players() {
    return wire.getPlayers();
  }

  /** Returns the round, 1 to 3. */
  public int round() {
    return wire.getRound();
  }

  /** Returns the phase of the game. */
  public Phase phase() {
    return wire.getPhase();
  }

  /** Returns the seat asked now, or -1 when the game is over. */
  public int toAct() {
    return wire.hasToAct() ? wire.getToAct() : -1;
  }

  /** Returns the order being resolved while its owner decides, or null. */
  public String deciding() {
    return wire.getDeciding().isEmpty() ? null : wire.getDeciding();
  }

  /** Returns the cards left in the supply. */
  public int supplySize() {
    return wire.getSupplySize();
  }

  /** Returns the oven pile of this round, first played first (card ids). */
  public List<String> oven() {
    return wire.getOvenList();
  }

  /** Returns how many cards of the oven have been turned over during resolution. */
  public int revealed() {
    return wire.getRevealed();
  }

  /** Returns the face-up ingredients on the table. */
  public Counts table() {
    return Counts.of(wire.getTable());
  }

  /** Returns the viewer's own ingredient cards. */
  public Counts hand() {
    return Counts.of(wire.getHand());
  }

  /** Returns the viewer's order cards in hand, sorted. */
  public List<String> handOrders() {
    return wire.getHandOrdersList();
  }

  /** Returns the viewer's orders still in its waiter, sorted. */
  public List<String> waiter() {
    return wire.getWaiterList();
  }

  /** Returns the used pile of the current round, oldest first. */
  public List<String> used() {
    return wire.getUsedList();
  }

  /** Returns the holder of the Mamma Mia! card, or -1 while nobody holds it. */
  public int mammaMiaHolder() {
    return wire.hasMammaMiaHolder() ? wire.getMammaMiaHolder() : -1;
  }

  /** Returns the public facts of every seat, in seat order. */
  public List<SeatInfo> seats() {
    return wire.getSeatsList();
  }

  /** Returns the viewer's own public facts, or null for a spectator. */
  public SeatInfo me() {
    return wire.hasSeat() && wire.getSeat() < wire.getSeatsCount() ? wire.getSeats(wire.getSeat()) : null;
  }

  /** Returns the winning seats once the game is over (empty before). */
  public List<Integer> winners() {
    return wire.getWinnersList();
  }
}
