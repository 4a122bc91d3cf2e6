package org.mammamia.kit;

import java.time.Instant;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import org.mammamia.v1.DecisionKind;
import org.mammamia.v1.DecisionRequest;

/**
 * A decision the server asks of the seat, typed: its view, every legal option, and its
 * time. Answering with any option is always legal.
 *
 * <p>Time: the decision's own deadline ({@link #deadline()}, {@link #deadlineMs()}); past
 * it the seat's time bank runs ({@link #timeBankMs()}), and at {@link #defaultAt()} the
 * server applies the default and counts a strike. {@link #remainingMs()} counts down
 * to the default on this machine's clock, from when the request arrived, so it holds
 * whatever the two clocks say.
 */
public final class Decision {
  private final DecisionRequest wire;
  private final SeatView view;
  private final List<Option> options;
  private final long receivedNanos;

  /** Wraps a wire request that arrived at {@code receivedNanos} ({@link System#nanoTime()}). */
  public Decision(DecisionRequest wire, long receivedNanos) {
    this.wire = wire;
    this.view = new SeatView(wire.getView());
    List<Option> list = new ArrayList<>(wire.getOptionsCount());
    for (int i = 0; i < wire.getOptionsCount(); i++) {
      list.add(new Option(i, wire.getOptions(i)));
    }
    this.options = Collections.unmodifiableList(list);
    this.receivedNanos = receivedNanos;
  }

  /** Returns the id the answer names. */
  public String id() {
    return wire.getDecisionId();
  }

  /** Returns true for a turn, false for a resolution decision (R-RES-8). */
  public boolean isTurn() {
    return wire.getKind() != DecisionKind.DECISION_KIND_RESOLVE;
  }

  /** Returns the seat's view at the moment of asking. */
  public SeatView view() {
    return view;
  }

  /** Returns every legal option in the canonical order (never empty). */
  public List<Option> options() {
    return options;
  }

  /** Returns the end of the decision's own time, on the server's clock. */
  public Instant deadline() {
    return Instant.ofEpochSecond(wire.getDeadline().getSeconds(), wire.getDeadline().getNanos());
  }

  /** Returns the milliseconds that were left until {@link #deadline()} when it was sent. */
  public long deadlineMs() {
    return wire.getDeadlineMs();
  }

  /** Returns the milliseconds left in the seat's time bank when it was sent (0: no bank). */
  public long timeBankMs() {
    return wire.getTimeBankMs();
  }

  /** Returns when the server applies the default action, on the server's clock. */
  public Instant defaultAt() {
    return Instant.ofEpochSecond(wire.getDefaultAt().getSeconds(), wire.getDefaultAt().getNanos());
  }

  /** Returns the milliseconds that were left until the default when it was sent. */
  public long defaultInMs() {
    return wire.getDefaultInMs();
  }

  /**
   * Returns the milliseconds left now before the server's default, counted on this
   * machine's clock from the request's arrival (negative once past; the network's delay
   * not included).
   */
  public long remainingMs() {
    return wire.getDefaultInMs() - (System.nanoTime() - receivedNanos) / 1_000_000;
  }

  /**
   * Returns the milliseconds left now before the decision's own deadline (after it, the
   * time bank pays for the lateness), counted as {@link #remainingMs()} is.
   */
  public long remainingOwnMs() {
    return wire.getDeadlineMs() - (System.nanoTime() - receivedNanos) / 1_000_000;
  }

  /** Returns the request as it came on the wire. */
  public DecisionRequest wire() {
    return wire;
  }
}
