package org.mammamia.kit;

import io.grpc.Status;
import java.time.Duration;
import java.util.EnumSet;
import java.util.Set;
import java.util.concurrent.ThreadLocalRandom;

/**
 * When to try a failed call again, and how long to pause first: the statuses after
 * which the same call may succeed later (the server restarting, draining or shedding
 * load, the connection dropping), with exponential backoff and jitter.
 */
public final class Retry {
  private static final Set<Status.Code> RETRYABLE =
      EnumSet.of(
          Status.Code.CANCELLED,
          Status.Code.UNKNOWN,
          Status.Code.DEADLINE_EXCEEDED,
          Status.Code.RESOURCE_EXHAUSTED,
          Status.Code.ABORTED,
          Status.Code.INTERNAL,
          Status.Code.UNAVAILABLE);

  private final Duration budget;
  private long failingSince = -1;
  private int attempt;

  /** Returns a retry state that gives up after {@code budget} of failures in a row. */
  public Retry(Duration budget) {
    this.budget = budget;
  }

  /** Returns true when a call that failed with {@code code} is worth trying again. */
  public static boolean retryable(Status.Code code) {
    return RETRYABLE.contains(code);
  }

  /** Notes that the server answered: the next failure starts a new budget. */
  public synchronized void succeeded() {
    failingSince = -1;
    attempt = 0;
  }

  /**
   * Returns the pause before the next attempt after a failure (exponential from 100 ms,
   * capped at 2 s, with jitter so that many bots do not retry in step).
   *
   * @throws ArenaException when the failures have lasted longer than the budget
   */
  public synchronized Duration failed(String failure) throws ArenaException {
    long now = System.nanoTime();
    if (failingSince < 0) {
      failingSince = now;
    }
    if (now - failingSince > budget.toNanos()) {
      throw new ArenaException(
          "gave up after " + budget.toSeconds() + " s without the server (" + failure + ")", null);
    }
    long base = Math.min(2000, 100L << Math.min(attempt, 10));
    attempt++;
    return Duration.ofMillis(Math.round(base * (0.5 + ThreadLocalRandom.current().nextDouble() / 2)));
  }
}
