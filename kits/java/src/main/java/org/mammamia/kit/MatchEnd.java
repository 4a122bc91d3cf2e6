package org.mammamia.kit;

import java.util.List;
import org.mammamia.v1.MatchEnded;
import org.mammamia.v1.MatchStatus;

/**
 * How a match ended for a seat: finished or aborted, the winners, the pizzas and ranks
 * of every seat, and the seat's final view ({@code MatchEnded}).
 */
public record MatchEnd(String matchId, int seat, MatchEnded wire) {

  /** Returns true when the match was played to its end (not aborted). */
  public boolean finished() {
    return wire.getStatus() == MatchStatus.MATCH_STATUS_FINISHED;
  }

  /** Returns the winning seats (empty for an aborted match). */
  public List<Integer> winners() {
    return wire.getWinnersList();
  }

  /** Returns true when this seat is among the winners. */
  public boolean won() {
    return wire.getWinnersList().contains(seat);
  }

  /** Returns the pizzas delivered per seat, in seat order. */
  public List<Integer> delivered() {
    return wire.getDeliveredList();
  }

  /** Returns the rank per seat, in seat order, 1 best. */
  public List<Integer> ranks() {
    return wire.getRanksList();
  }

  /** Returns the seat's view of the game as it ended. */
  public SeatView view() {
    return new SeatView(wire.getView());
  }
}
