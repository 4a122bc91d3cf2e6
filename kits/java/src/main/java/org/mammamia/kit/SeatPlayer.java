package org.mammamia.kit;

import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import java.nio.charset.StandardCharsets;
import java.security.SecureRandom;
import java.time.Duration;
import java.util.HexFormat;
import java.util.concurrent.TimeUnit;
import org.mammamia.v1.ActRequest;
import org.mammamia.v1.ActResult;
import org.mammamia.v1.DeadlinePassed;
import org.mammamia.v1.JoinRequest;
import org.mammamia.v1.JoinResponse;
import org.mammamia.v1.ObserveRequest;
import org.mammamia.v1.PlayRequest;
import org.mammamia.v1.Refusal;
import org.mammamia.v1.SeatEvent;
import org.mammamia.v1.SeatEvents;
import org.mammamia.v1.SeatGrpc;
import org.mammamia.v1.Snapshot;

/**
 * Plays seats: Join, then the Play stream (answers go up the stream that brings the
 * decisions), reconnecting with backoff after a dropped connection and resuming after
 * the last sequence seen, until the match ends. The same follower plays a seat taken on
 * a PlayMatches call ({@link Table}).
 */
public final class SeatPlayer {
  /**
   * The batching bound the seat's streams ask for (ObserveRequest.batch_ms): the bot reads
   * the others' turns only when it is asked, so they may wait for its next decision
   * instead of costing the server a message each.
   */
  static final int BATCH_MS = 1000;

  /** The most bytes of UTF-8 a note keeps on the server (ActRequest.note). */
  static final int NOTE_LIMIT = 1024;

  private static final SecureRandom SEEDS = new SecureRandom();

  private final Arena arena;
  private final Strategy strategy;
  private final Duration retryFor;

  /**
   * A player of seats on {@code arena}, deciding with {@code strategy}, giving up after
   * {@code retryFor} without the server.
   */
  public SeatPlayer(Arena arena, Strategy strategy, Duration retryFor) {
    this.arena = arena;
    this.strategy = strategy;
    this.retryFor = retryFor;
  }

  /** What a seat keeps between its calls: where to resume, and its client seed. */
  public static final class Progress {
    long lastSequence;
    boolean joined;
    // Entropy of the seat's own, mixed into the deal with the server's committed seed
    // (docs/fairness.md): kept with the seat, so that a Join after a `sit` gives the same.
    final String clientSeed;

    /** A seat not played yet. */
    public Progress() {
      byte[] seed = new byte[16];
      SEEDS.nextBytes(seed);
      clientSeed = HexFormat.of().formatHex(seed);
    }

    /** Returns the highest event sequence seen (where to resume). */
    public long lastSequence() {
      return lastSequence;
    }
  }

  /**
   * Returns the end of the match of the seat {@code token} on {@code host} (null or empty:
   * the arena's target), played as {@code name}.
   *
   * @throws ArenaException when the server refuses the seat (a status no retry can
   *     change) or stays unreachable longer than the retry budget
   * @throws InterruptedException when the thread is interrupted
   */
  public MatchEnd play(String host, String token, String name, Log log)
      throws ArenaException, InterruptedException {
    return play(host, token, name, log, new Progress());
  }

  /** As {@link #play(String, String, String, Log)}, resuming a seat from {@code progress}. */
  public MatchEnd play(String host, String token, String name, Log log, Progress progress)
      throws ArenaException, InterruptedException {
    SeatGrpc.SeatBlockingStub blocking =
        Arena.withSeatToken(SeatGrpc.newBlockingStub(arena.channel(host)), token);
    SeatGrpc.SeatStub async = Arena.withSeatToken(SeatGrpc.newStub(arena.channel(host)), token);
    Retry retry = new Retry(retryFor);
    while (true) {
      String failure;
      try {
        JoinResponse joined =
            blocking
                .withDeadlineAfter(30, TimeUnit.SECONDS)
                .join(
                    JoinRequest.newBuilder()
                        .setName(name)
                        .setClientSeed(progress.clientSeed)
                        .build());
        Log seatLog = log.with("match", joined.getMatchId(), "seat", joined.getSeat());
        seatLog.info(
            progress.joined ? "rejoined" : "joined",
            "colour",
            joined.getColour(),
            "players",
            joined.getPlayers(),
            "after_sequence",
            progress.lastSequence);
        progress.joined = true;
        Inbox<PlayRequest, SeatEvents> call = new Inbox<>();
        async.play(call);
        PlayRequest first =
            PlayRequest.newBuilder()
                .setObserve(
                    ObserveRequest.newBuilder()
                        .setAfterSequence(progress.lastSequence)
                        .setBatchMs(BATCH_MS))
                .build();
        MatchEnd end = follow(call, first, true, progress, retry, seatLog);
        if (end != null) {
          return end;
        }
        failure = "stream closed before the match ended";
      } catch (StatusRuntimeException e) {
        Status status = e.getStatus();
        if (!Retry.retryable(status.getCode())) {
          throw ArenaException.refused("", status);
        }
        failure = status.getCode() + ": " + status.getDescription();
      }
      Duration pause = retry.failed(failure);
      log.warn(
          "reconnecting",
          "reason",
          failure,
          "pause_ms",
          pause.toMillis(),
          "after_sequence",
          progress.lastSequence);
      Thread.sleep(pause.toMillis());
    }
  }

  /**
   * Returns the match's end as {@code call} streams it, after sending {@code first} (the
   * {@code observe} of Play, the {@code sit} of PlayMatches), or null when the call closed
   * with OK before the end. {@code closeAtEnd} closes the call at the end (Play); else it
   * is left open for the next seat (PlayMatches).
   *
   * @throws StatusRuntimeException when the call broke (its status)
   * @throws InterruptedException when the thread is interrupted (the call is cancelled)
   */
  MatchEnd follow(
      Inbox<PlayRequest, SeatEvents> call,
      PlayRequest first,
      boolean closeAtEnd,
      Progress progress,
      Retry retry,
      Log log)
      throws InterruptedException {
    Follower follower = new Follower(call, progress, retry, log);
    call.send(first);
    try {
      while (true) {
        Object item = call.take();
        if (item instanceof Inbox.End end) {
          if (end.status().isOk()) {
            return null;
          }
          throw end.status().asRuntimeException();
        }
        long arrived = System.nanoTime();
        for (SeatEvent event : ((SeatEvents) item).getEventsList()) {
          MatchEnd matchEnd = follower.handle(event, arrived);
          if (matchEnd != null) {
            if (closeAtEnd) {
              call.halfClose();
              call.cancel("the match has ended");
            }
            return matchEnd;
          }
        }
      }
    } catch (InterruptedException e) {
      call.cancel("stopped");
      throw e;
    }
  }

  /** One seat's stream as it is read: the open decision, the answers tried. */
  private final class Follower {
    private final Inbox<PlayRequest, SeatEvents> call;
    private final Progress progress;
    private final Retry retry;
    private final Log log;
    private String matchId = "";
    private int seat = -1;
    private Decision open;
    private final java.util.Set<Integer> tried = new java.util.HashSet<>();

    Follower(Inbox<PlayRequest, SeatEvents> call, Progress progress, Retry retry, Log log) {
      this.call = call;
      this.progress = progress;
      this.retry = retry;
      this.log = log;
    }

    /** Returns the match's end when {@code event} is it, else null. */
    MatchEnd handle(SeatEvent event, long arrived) {
      // Any event proves the connection: the reconnection budget starts afresh.
      retry.succeeded();
      progress.lastSequence = Math.max(progress.lastSequence, event.getSequence());
      switch (event.getEventCase()) {
        case SNAPSHOT -> {
          Snapshot snapshot = event.getSnapshot();
          matchId = snapshot.getMatchId();
          seat = snapshot.getView().hasSeat() ? snapshot.getView().getSeat() : -1;
          open = null;
          progress.joined = true;
          log.info(
              "snapshot",
              "status",
              snapshot.getStatus(),
              "sequence",
              event.getSequence(),
              "missed",
              snapshot.getHistoryCount(),
              "open_decision",
              snapshot.hasDecision() ? snapshot.getDecision().getDecisionId() : null);
          if (snapshot.hasDecision()) {
            decide(new Decision(snapshot.getDecision(), arrived));
          }
        }
        case DECISION -> decide(new Decision(event.getDecision(), arrived));
        case ACT_RESULT -> onActResult(event.getActResult());
        case DEADLINE_PASSED -> onDeadlinePassed(event.getDeadlinePassed());
        case MATCH_ENDED -> {
          MatchEnd end = new MatchEnd(matchId, seat, event.getMatchEnded());
          log.info(
              "match_ended",
              "status",
              end.wire().getStatus(),
              "winners",
              end.winners(),
              "delivered",
              end.delivered(),
              "ranks",
              end.ranks(),
              "reason",
              end.wire().getReason().isEmpty() ? null : end.wire().getReason());
          return end;
        }
        default -> {
          // Turns, rounds and resolutions: the next decision's view holds them.
        }
      }
      return null;
    }

    private void decide(Decision decision) {
      open = decision;
      tried.clear();
      Strategy.Choice choice;
      try {
        choice = strategy.choose(decision);
        if (choice == null || choice.index() < 0 || choice.index() >= decision.options().size()) {
          throw new IllegalStateException("the strategy chose no option: " + choice);
        }
      } catch (RuntimeException e) {
        log.error("strategy_failed", "decision", decision.id(), "error", e.toString());
        choice = new Strategy.Choice(0, "the strategy failed: the first option");
      }
      answer(choice.index(), choice.reason());
    }

    private void answer(int index, String reason) {
      tried.add(index);
      call.send(
          PlayRequest.newBuilder()
              .setAct(
                  ActRequest.newBuilder()
                      .setDecisionId(open.id())
                      .setOption(index)
                      .setNote(fitNote(reason)))
              .build());
      log.info(
          "decision",
          "decision",
          open.id(),
          "kind",
          open.isTurn() ? "turn" : "resolve",
          "round",
          open.view().round(),
          "option",
          index,
          "of",
          open.options().size(),
          "choice",
          open.options().get(index).describe(),
          "reason",
          reason,
          "default_in_ms",
          open.defaultInMs());
    }

    private void onActResult(ActResult result) {
      boolean mine = open != null && open.id().equals(result.getDecisionId());
      if (result.getAccepted()) {
        if (mine) {
          open = null;
        }
        return;
      }
      log.warn(
          "answer_refused",
          "decision",
          result.getDecisionId(),
          "refusal",
          result.getRefusal(),
          "rule",
          result.getRule().isEmpty() ? null : result.getRule(),
          "message",
          result.getMessage());
      // An option that does not exist or is not legal now leaves the decision open:
      // answer with an option not tried yet. Any other refusal means it is closed.
      if (mine
          && (result.getRefusal() == Refusal.REFUSAL_ILLEGAL
              || result.getRefusal() == Refusal.REFUSAL_NO_SUCH_OPTION)) {
        for (int i = 0; i < open.options().size(); i++) {
          if (!tried.contains(i)) {
            answer(i, "previous answer refused");
            return;
          }
        }
      }
      if (mine) {
        open = null;
      }
    }

    private void onDeadlinePassed(DeadlinePassed passed) {
      if (passed.getSeat() != seat) {
        return;
      }
      log.warn(
          "deadline_passed",
          "decision",
          passed.getDecisionId(),
          "reason",
          passed.getReason(),
          "strikes",
          passed.getStrikes(),
          "autopilot",
          passed.getAutopilot());
      if (open != null && open.id().equals(passed.getDecisionId())) {
        open = null;
      }
    }
  }

  /** Returns {@code text} cut to {@link #NOTE_LIMIT} bytes of UTF-8, at a character boundary. */
  static String fitNote(String text) {
    String note = text == null ? "" : text;
    if (note.getBytes(StandardCharsets.UTF_8).length <= NOTE_LIMIT) {
      return note;
    }
    StringBuilder cut = new StringBuilder();
    int bytes = 0;
    for (int i = 0; i < note.length(); ) {
      int codePoint = note.codePointAt(i);
      String ch = new String(Character.toChars(codePoint));
      int size = ch.getBytes(StandardCharsets.UTF_8).length;
      if (bytes + size > NOTE_LIMIT) {
        break;
      }
      cut.append(ch);
      bytes += size;
      i += Character.charCount(codePoint);
    }
    return cut.toString();
  }
}
