package org.mammamia.kit;

import io.grpc.CallOptions;
import io.grpc.Channel;
import io.grpc.ClientCall;
import io.grpc.ClientInterceptor;
import io.grpc.ForwardingClientCall;
import io.grpc.ForwardingClientCallListener;
import io.grpc.Metadata;
import io.grpc.MethodDescriptor;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.mammamia.v1.Assignment;
import org.mammamia.v1.EnterRequest;
import org.mammamia.v1.LadderGrpc;
import org.mammamia.v1.RegisterRequest;

/**
 * Plays on the ladder: enters it ({@code Ladder.Enter}) and plays every assignment while
 * staying on the stream for the next one, each on the server's PlayMatches call of its
 * host ({@link Table}), or with Join and Play when that call is busy with another match,
 * has failed mid-match, or the server has none. Matches are played concurrently.
 */
public final class LadderPlayer {
  private final Arena arena;
  private final SeatPlayer seats;
  private final Duration retryFor;
  private final Map<String, Table> tables = new ConcurrentHashMap<>();
  private final ExecutorService games =
      Executors.newCachedThreadPool(
          runnable -> {
            Thread thread = new Thread(runnable, "mammamia-seat");
            thread.setDaemon(true);
            return thread;
          });

  /**
   * A ladder player on {@code arena}, deciding with {@code strategy}, giving up after
   * {@code retryFor} without the server.
   */
  public LadderPlayer(Arena arena, Strategy strategy, Duration retryFor) {
    this.arena = arena;
    this.seats = new SeatPlayer(arena, strategy, retryFor);
    this.retryFor = retryFor;
  }

  /**
   * Returns the new key of the bot name {@code name}, registered on the arena's server
   * (shown only once: keep it).
   *
   * @throws ArenaException when the server refuses the name (ALREADY_EXISTS when taken,
   *     INVALID_ARGUMENT for a bad name, FAILED_PRECONDITION while registration is closed)
   */
  public String register(String name) throws ArenaException {
    Retry retry = new Retry(retryFor);
    while (true) {
      try {
        return LadderGrpc.newBlockingStub(arena.channel(null))
            .withDeadlineAfter(30, TimeUnit.SECONDS)
            .register(RegisterRequest.newBuilder().setName(name).build())
            .getKey();
      } catch (StatusRuntimeException e) {
        Status status = e.getStatus();
        if (!Retry.retryable(status.getCode())) {
          throw ArenaException.refused("cannot register " + name + ": ", status);
        }
        pause(retry.failed(status.getCode() + ": " + status.getDescription()));
      }
    }
  }

  /**
   * Enters the ladder as {@code version} of {@code name} ("": the default version) with
   * its {@code key}, and plays every assignment until the thread is interrupted (it then
   * returns, leaving the matches in progress to the server), or a newer entry of the same
   * bot takes over (it then finishes the matches in progress and returns). Returns the
   * number of matches played to their end.
   *
   * @throws ArenaException when the server refuses the bot (a wrong name or key, a
   *     suspended bot, a bad version) or the ladder stays unreachable longer than the
   *     retry budget
   */
  public int play(String name, String key, String version, Log log) throws ArenaException {
    AtomicInteger played = new AtomicInteger();
    Retry retry = new Retry(retryFor);
    LadderGrpc.LadderStub ladder = Arena.withBotKey(LadderGrpc.newStub(arena.channel(null)), key);
    EnterRequest enter = EnterRequest.newBuilder().setName(name).setVersion(version).build();
    try {
      while (true) {
        Inbox<EnterRequest, Assignment> stream = new Inbox<>();
        log.info("entering", "name", name, "version", version.isEmpty() ? "-" : version);
        ladder.withInterceptors(onEntered(retry, log)).enter(enter, stream);
        Status ended;
        try {
          ended = follow(stream, name, retry, played, log);
        } catch (InterruptedException e) {
          stream.cancel("leaving the ladder");
          log.info("left_ladder", "played", played.get());
          Thread.currentThread().interrupt();
          return played.get();
        }
        if (ended.getCode() == Status.Code.ALREADY_EXISTS) {
          // One copy of a bot is on the ladder at a time: this one stops entering and
          // plays the matches it was given to their end.
          log.warn("replaced", "reason", ended.getDescription());
          games.shutdown();
          awaitGames();
          log.info("left_ladder", "played", played.get());
          return played.get();
        }
        String failure;
        if (ended.isOk()) {
          failure = "ladder stream closed";
        } else if (Retry.retryable(ended.getCode())) {
          failure = ended.getCode() + ": " + ended.getDescription();
        } else {
          throw ArenaException.refused("ladder refused " + name + ": ", ended);
        }
        Duration pause = retry.failed(failure);
        log.warn("reentering", "reason", failure, "pause_ms", pause.toMillis());
        try {
          Thread.sleep(pause.toMillis());
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
          return played.get();
        }
      }
    } finally {
      games.shutdownNow();
    }
  }

  /**
   * Returns an interceptor that notes the entry once the server has recorded it (the Enter
   * call's response headers): the bot is on the ladder, so the next failure of the stream
   * starts a new retry budget however long the wait for an assignment was.
   */
  private static ClientInterceptor onEntered(Retry retry, Log log) {
    return new ClientInterceptor() {
      @Override
      public <Q, R> ClientCall<Q, R> interceptCall(
          MethodDescriptor<Q, R> method, CallOptions options, Channel next) {
        return new ForwardingClientCall.SimpleForwardingClientCall<Q, R>(
            next.newCall(method, options)) {
          @Override
          public void start(Listener<R> listener, Metadata headers) {
            super.start(
                new ForwardingClientCallListener.SimpleForwardingClientCallListener<R>(listener) {
                  @Override
                  public void onHeaders(Metadata received) {
                    retry.succeeded();
                    log.info("entered");
                    super.onHeaders(received);
                  }
                },
                headers);
          }
        };
      }
    };
  }

  /** Returns how the Enter stream ended, having started a game for every assignment. */
  private Status follow(
      Inbox<EnterRequest, Assignment> stream,
      String name,
      Retry retry,
      AtomicInteger played,
      Log log)
      throws InterruptedException {
    while (true) {
      Object item = stream.take();
      if (item instanceof Inbox.End end) {
        return end.status();
      }
      retry.succeeded();
      Assignment assignment = (Assignment) item;
      if (assignment.getMatchId().isEmpty()) {
        // No match: a notice of why the bot waits (the ladder paused); it stays entered.
        log.info("ladder_notice", "notice", assignment.getWaiting());
        continue;
      }
      // Another host of the ladder may run the match: play there, with the same
      // credentials; empty means the server the bot entered through.
      String host = assignment.getHostAddress();
      Log seatLog = log.with("match", assignment.getMatchId(), "seat", assignment.getSeat());
      seatLog.info(
          "assigned",
          "players",
          assignment.getPlayers(),
          "host",
          host.isEmpty() ? arena.target() : host);
      games.execute(
          () -> {
            try {
              MatchEnd end = playAssigned(host, assignment.getSeatToken(), name, seatLog);
              if (end != null) {
                played.incrementAndGet();
              }
            } catch (ArenaException e) {
              seatLog.error("seat_lost", "reason", e.getMessage());
            } catch (InterruptedException e) {
              Thread.currentThread().interrupt();
            }
          });
    }
  }

  /**
   * Returns the end of an assigned seat's match: on the host's table when it is free,
   * else (or to resume after the table's call failed) with Join and Play.
   */
  private MatchEnd playAssigned(String host, String token, String name, Log log)
      throws ArenaException, InterruptedException {
    SeatPlayer.Progress progress = new SeatPlayer.Progress();
    Table table = tables.computeIfAbsent(host, h -> new Table(arena, h));
    if (table.take()) {
      try {
        MatchEnd end = table.play(seats, token, name, progress, new Retry(retryFor), log);
        if (end != null) {
          return end;
        }
        log.warn("stream_closed", "call", "PlayMatches", "after_sequence", progress.lastSequence());
      } catch (StatusRuntimeException e) {
        Status status = e.getStatus();
        if (status.getCode() == Status.Code.UNIMPLEMENTED) {
          // A server older than PlayMatches: a Play call per match from now on.
          table.unsupported();
          log.info("play_matches_unsupported", "server", host.isEmpty() ? arena.target() : host);
        } else if (!Retry.retryable(status.getCode())) {
          throw ArenaException.refused("", status);
        } else {
          log.warn(
              "connection_lost",
              "call",
              "PlayMatches",
              "reason",
              status.getCode() + ": " + status.getDescription(),
              "after_sequence",
              progress.lastSequence());
        }
      }
    }
    return seats.play(host, token, name, log, progress);
  }

  private void awaitGames() {
    try {
      while (!games.awaitTermination(1, TimeUnit.SECONDS)) {
        // The matches in progress go on to their end.
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  private static void pause(Duration pause) throws ArenaException {
    try {
      Thread.sleep(pause.toMillis());
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new ArenaException("interrupted", null);
    }
  }
}
