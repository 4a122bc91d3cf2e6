//! Playing on the ladder: register a name, enter (Ladder.Enter) and play every
//! Assignment while staying on the stream for the next one. Each server the
//! assignments name (`host_address`) gets one PlayMatches call, a *table*, where
//! each seat is taken with a `sit`; a match whose table is busy with another, or
//! whose call failed mid-match, is played (resumed) with Join and Play.

use std::collections::HashMap;
use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{mpsc, Mutex};
use tokio::task::JoinSet;
use tokio_stream::wrappers::UnboundedReceiverStream;
use tonic::transport::Channel;
use tonic::{Code, Request, Status};

use crate::connect::{ConnectError, Connector};
use crate::control::{is_retryable, status_line, Backoff, Log, Stop};
use crate::pb;
use crate::pb::ladder_client::LadderClient;
use crate::pb::seat_client::SeatClient;
use crate::seat::{
    follow, play_seat, unimplemented, with_token, Call, Followed, MatchEnd, Progress, SeatError, BATCH_MS,
};
use crate::strategy::Strategy;

/// Returns the secret key of a newly registered bot `name` (Ladder.Register);
/// the server's status when it refuses (ALREADY_EXISTS: the name is taken).
pub async fn register(channel: Channel, name: &str) -> Result<String, Status> {
    let reply = LadderClient::new(channel).register(pb::RegisterRequest { name: name.to_string() }).await?;
    Ok(reply.into_inner().key)
}

/// Who enters, and how long to wait for a server that is away.
#[derive(Clone, Debug)]
pub struct Entry {
    /// The registered name.
    pub name: String,
    /// Its secret key (the `bot-key` metadata).
    pub key: String,
    /// The version that enters (EnterRequest.version; empty: the default one).
    pub version: String,
    /// Give up after this long without the server (entering or playing).
    pub retry_for: Duration,
}

/// How a stay on the ladder ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Left {
    /// `stop` fired.
    Stopped,
    /// A newer Enter of the same bot took over (ALREADY_EXISTS): this copy left,
    /// after playing the matches it had been given.
    Replaced,
}

/// Why the bot could not stay on the ladder.
#[derive(Debug)]
pub enum LadderError {
    /// The server refused the entry for good: a wrong name or key
    /// (UNAUTHENTICATED, PERMISSION_DENIED), a suspended bot, a bad version.
    Refused(Status),
    /// The server stayed unreachable for the retry budget; the last failure.
    GaveUp(Duration, String),
    /// An assignment named a host address that is no HOST:PORT.
    Connect(ConnectError),
}

impl fmt::Display for LadderError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LadderError::Refused(status) => write!(f, "the ladder refused the bot: {}", status_line(status)),
            LadderError::GaveUp(budget, last) => {
                write!(f, "gave up after {} s without the ladder ({last})", budget.as_secs())
            }
            LadderError::Connect(error) => error.fmt(f),
        }
    }
}

impl std::error::Error for LadderError {}

/// One PlayMatches call to a server, opened on first use and kept between
/// matches; `None` after a failure (the next seat opens a new one).
struct Table {
    channel: Channel,
    call: Mutex<Option<Call>>,
    unsupported: AtomicBool,
}

impl Table {
    fn new(channel: Channel) -> Table {
        Table { channel, call: Mutex::new(None), unsupported: AtomicBool::new(false) }
    }
}

/// Returns the number of assigned matches played to their end once the bot has
/// left the ladder, and why it left. Enters as `entry` through `server`, and plays
/// each assignment (concurrently, each with a clone of `strategy`) on the host it
/// names, with `connector`'s credentials. Enters again with backoff after the
/// stream breaks (a drain, a lost connection); fails when the server refuses the
/// bot for good or stays away for `entry.retry_for`.
pub async fn play_ladder<S: Strategy + Clone + 'static>(
    connector: &Connector,
    server: &str,
    entry: &Entry,
    strategy: S,
    log: &Log,
    mut stop: Stop,
) -> Result<(usize, Left), LadderError> {
    let home = connector.channel(server).map_err(LadderError::Connect)?;
    let mut ladder = LadderClient::new(home.clone());
    let mut tables: HashMap<String, Arc<Table>> = HashMap::new();
    let mut running: JoinSet<bool> = JoinSet::new();
    let mut played = 0usize;
    let mut backoff = Backoff::new(entry.retry_for);
    let mut assigned = 0usize;

    let outcome = loop {
        let request = pb::EnterRequest { name: entry.name.clone(), version: entry.version.clone() };
        let failure = match with_token(request, "bot-key", &entry.key) {
            Err(status) => break Err(LadderError::Refused(status)),
            Ok(request) => {
                let entered = tokio::select! {
                    entered = ladder.enter(request) => entered,
                    _ = stop.wait() => break Ok(Left::Stopped),
                };
                match entered {
                    Err(status) => status,
                    Ok(response) => {
                        log.line("entered", format_args!("name={} version={:?}", entry.name, entry.version));
                        backoff.reset();
                        let mut assignments = response.into_inner();
                        loop {
                            let next = tokio::select! {
                                next = assignments.message() => next,
                                Some(done) = running.join_next() => {
                                    played += usize::from(matches!(done, Ok(true)));
                                    continue;
                                }
                                _ = stop.wait() => break Status::cancelled("stopped"),
                            };
                            let assignment = match next {
                                Ok(Some(assignment)) => assignment,
                                Ok(None) => break Status::unavailable("the ladder stream closed"),
                                Err(status) => break status,
                            };
                            backoff.reset();
                            // No match: a notice of why the bot waits (the ladder
                            // paused); it stays entered.
                            if assignment.match_id.is_empty() {
                                log.line("ladder_notice", format_args!("notice={:?}", assignment.waiting));
                                continue;
                            }
                            assigned += 1;
                            // Another host of the ladder may run the match: play
                            // there, with the same credentials.
                            let host = if assignment.host_address.is_empty() {
                                server.to_string()
                            } else {
                                assignment.host_address.clone()
                            };
                            let table = match tables.get(&host) {
                                Some(table) => table.clone(),
                                None => {
                                    let channel = match connector.channel(&host) {
                                        Ok(channel) => channel,
                                        Err(error) => {
                                            log.line(
                                                "seat_lost",
                                                format_args!(
                                                    "match={} reason={error:?}",
                                                    assignment.match_id
                                                ),
                                            );
                                            continue;
                                        }
                                    };
                                    let table = Arc::new(Table::new(channel));
                                    tables.insert(host.clone(), table.clone());
                                    table
                                }
                            };
                            let seat_log = log
                                .with(format_args!("match={} seat={}", assignment.match_id, assignment.seat));
                            seat_log.line(
                                "assigned",
                                format_args!(
                                    "players={} assignment={assigned} host={host}",
                                    assignment.players
                                ),
                            );
                            running.spawn(play_assigned(
                                table,
                                assignment.seat_token,
                                entry.name.clone(),
                                strategy.clone(),
                                entry.retry_for,
                                seat_log,
                                stop.clone(),
                            ));
                        }
                    }
                }
            }
        };
        if stop.is_stopped() {
            break Ok(Left::Stopped);
        }
        match failure.code() {
            // A newer entry of this bot took over: one copy is on the ladder at a time.
            Code::AlreadyExists => {
                log.line("replaced", format_args!("reason={:?}", status_line(&failure)));
                break Ok(Left::Replaced);
            }
            code if !is_retryable(code) => break Err(LadderError::Refused(failure)),
            _ => {}
        }
        let Some(pause) = backoff.next_pause() else {
            break Err(LadderError::GaveUp(backoff.budget(), status_line(&failure)));
        };
        log.line(
            "reentering",
            format_args!("reason={:?} pause_ms={}", status_line(&failure), pause.as_millis()),
        );
        if !stop.sleep(pause).await {
            break Ok(Left::Stopped);
        }
    };
    // The matches given go on to their end (or until `stop`).
    while let Some(done) = running.join_next().await {
        played += usize::from(matches!(done, Ok(true)));
    }
    log.line("left_ladder", format_args!("played={played}"));
    outcome.map(|left| (played, left))
}

/// Returns true when an assigned seat's match was played to its end. Takes the
/// seat on `table` when it is free; when it is busy with another match, the server
/// has no PlayMatches, or the call fails mid-match, plays the match (resumed from
/// the last sequence the call saw) with Join and Play.
async fn play_assigned<S: Strategy>(
    table: Arc<Table>,
    token: String,
    name: String,
    mut strategy: S,
    retry_for: Duration,
    log: Log,
    mut stop: Stop,
) -> bool {
    let mut progress = Progress::new(retry_for);
    if !table.unsupported.load(Ordering::Relaxed) {
        if let Ok(mut slot) = table.call.try_lock() {
            match at_table(
                &table.channel,
                &mut slot,
                &token,
                &name,
                &mut strategy,
                &mut progress,
                &log,
                &mut stop,
            )
            .await
            {
                Ok(Followed::Ended(end)) => return report(&log, Ok(Some(*end))),
                Ok(Followed::Stopped) => return false,
                Ok(Followed::Closed) => {
                    *slot = None;
                    log.line(
                        "stream_closed",
                        format_args!("call=PlayMatches after_sequence={}", progress.last_sequence),
                    );
                }
                Err(status) if unimplemented(&status) => {
                    // A server older than PlayMatches: a Play call per match from now on.
                    *slot = None;
                    table.unsupported.store(true, Ordering::Relaxed);
                    log.line("play_matches_unsupported", "");
                }
                Err(status) if !is_retryable(status.code()) => {
                    *slot = None;
                    return report(&log, Err(SeatError::Refused(status)));
                }
                Err(status) => {
                    *slot = None;
                    log.line(
                        "connection_lost",
                        format_args!(
                            "call=PlayMatches reason={:?} after_sequence={}",
                            status_line(&status),
                            progress.last_sequence
                        ),
                    );
                }
            }
        }
    }
    let result =
        play_seat(table.channel.clone(), &token, &name, &mut strategy, &mut progress, &log, stop).await;
    report(&log, result)
}

/// Returns true for a match played to its end, logging a seat lost.
fn report(log: &Log, result: Result<Option<MatchEnd>, SeatError>) -> bool {
    match result {
        Ok(end) => end.is_some(),
        Err(error) => {
            log.line("seat_lost", format_args!("reason={:?}", error.to_string()));
            false
        }
    }
}

/// Returns what playing the seat of `token` on the table's call came to, opening
/// the call when there is none. The call stays in `slot` after the match's end,
/// for the next seat.
#[allow(clippy::too_many_arguments)]
async fn at_table<S: Strategy>(
    channel: &Channel,
    slot: &mut Option<Call>,
    token: &str,
    name: &str,
    strategy: &mut S,
    progress: &mut Progress,
    log: &Log,
    stop: &mut Stop,
) -> Result<Followed, Status> {
    let sit = pb::SitRequest {
        seat_token: token.to_string(),
        after_sequence: progress.last_sequence,
        name: name.to_string(),
        client_seed: progress.client_seed.clone(),
        batch_ms: BATCH_MS,
    };
    let message = pb::PlayRequest { message: Some(pb::play_request::Message::Sit(sit)) };
    if slot.as_ref().is_some_and(|call| call.tx.send(message.clone()).is_ok()) {
        log.line("seat_taken", "call=PlayMatches");
    } else {
        let (tx, rx) = mpsc::unbounded_channel();
        let _ = tx.send(message);
        let request = Request::new(UnboundedReceiverStream::new(rx));
        let mut client = SeatClient::new(channel.clone());
        let events = tokio::select! {
            opened = client.play_matches(request) => opened?.into_inner(),
            _ = stop.wait() => return Ok(Followed::Stopped),
        };
        log.line("seat_taken", "call=PlayMatches opened=true");
        *slot = Some(Call { tx, events });
    }
    let call = slot.as_mut().expect("the table's call was just opened");
    follow(call, strategy, progress, log, stop).await
}
