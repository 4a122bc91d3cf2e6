//! Playing one seat: Join, then the Play stream (answers go up the stream that
//! brings the decisions), reconnecting with backoff after a dropped connection and
//! resuming after the last sequence seen, until the match ends. The same follower
//! plays a seat taken with a `sit` on a PlayMatches call (the ladder's tables).

use std::fmt;
use std::time::{Duration, Instant};

use tokio::sync::mpsc;
use tokio_stream::wrappers::UnboundedReceiverStream;
use tonic::metadata::MetadataValue;
use tonic::transport::Channel;
use tonic::{Code, Request, Status, Streaming};

use crate::control::{is_retryable, random_u64, status_line, Backoff, Log, Stop};
use crate::pb;
use crate::pb::seat_client::SeatClient;
use crate::strategy::{Answer, Strategy};
use crate::view::{Decision, View};

/// The batching bound the seat's streams ask for (ObserveRequest.batch_ms): the
/// bot reads the others' turns only when asked, so they may travel with its next
/// decision instead of costing the server a message each.
pub const BATCH_MS: u32 = 1000;

/// The most bytes of UTF-8 a note keeps on the server (ActRequest.note).
pub const NOTE_LIMIT: usize = 1024;

/// How a match ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EndStatus {
    Finished,
    Aborted,
    /// Another value (a newer server).
    Other(i32),
}

/// The end of a match for this seat (MatchEnded).
#[derive(Clone, Debug)]
pub struct MatchEnd {
    pub match_id: String,
    pub seat: Option<u32>,
    pub status: EndStatus,
    /// Winning seats; empty for an aborted match.
    pub winners: Vec<u32>,
    /// Pizzas delivered per seat, in seat order.
    pub delivered: Vec<u32>,
    /// Rank per seat, in seat order, 1 best.
    pub ranks: Vec<u32>,
    /// Why an aborted match was cut off.
    pub reason: String,
    /// The seat's view of the game as it ended.
    pub view: View,
}

impl MatchEnd {
    /// Returns true when the match was played to its end.
    pub fn finished(&self) -> bool {
        self.status == EndStatus::Finished
    }
}

/// Why a seat could not be played to its end.
#[derive(Debug)]
pub enum SeatError {
    /// The server refused the seat for good (a bad token, an unknown or ended
    /// match, a malformed request): no retry can change it.
    Refused(Status),
    /// The server stayed unreachable for the retry budget; the last failure.
    GaveUp(Duration, String),
}

impl fmt::Display for SeatError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SeatError::Refused(status) => write!(f, "refused: {}", status_line(status)),
            SeatError::GaveUp(budget, last) => {
                write!(f, "gave up after {} s without the server ({last})", budget.as_secs())
            }
        }
    }
}

impl std::error::Error for SeatError {}

/// What a seat keeps between its calls: the highest sequence seen, its client
/// seed (the same one on every Join and `sit`), and the reconnection backoff.
#[derive(Clone, Debug)]
pub struct Progress {
    pub last_sequence: u64,
    pub client_seed: String,
    pub backoff: Backoff,
}

impl Progress {
    /// Returns the progress of a seat not played yet, giving up after `retry_for`
    /// without a server.
    pub fn new(retry_for: Duration) -> Progress {
        Progress {
            last_sequence: 0,
            // Entropy of the seat's own, mixed into the deal with the server's
            // committed seed (docs/fairness.md): the server cannot choose the deal alone.
            client_seed: format!("{:016x}{:016x}", random_u64(), random_u64()),
            backoff: Backoff::new(retry_for),
        }
    }
}

/// An open call of the seat service: the sending side and the event stream.
pub(crate) struct Call {
    pub(crate) tx: mpsc::UnboundedSender<pb::PlayRequest>,
    pub(crate) events: Streaming<pb::SeatEvents>,
}

/// What following a seat's stream came to.
pub(crate) enum Followed {
    Ended(Box<MatchEnd>),
    /// The stream closed (OK) before `match_ended`.
    Closed,
    Stopped,
}

/// Returns a request carrying `token` as the `seat-token` metadata.
pub(crate) fn with_token<T>(message: T, key: &'static str, token: &str) -> Result<Request<T>, Status> {
    let mut request = Request::new(message);
    let value = MetadataValue::try_from(token)
        .map_err(|_| Status::invalid_argument(format!("{key} is not printable ASCII")))?;
    request.metadata_mut().insert(key, value);
    Ok(request)
}

/// Returns an open Play call of the seat, its first message `observe` sent.
async fn open_play(client: &mut SeatClient<Channel>, token: &str, after: u64) -> Result<Call, Status> {
    let (tx, rx) = mpsc::unbounded_channel();
    let observe = pb::ObserveRequest { after_sequence: after, batch_ms: BATCH_MS };
    let _ = tx.send(pb::PlayRequest { message: Some(pb::play_request::Message::Observe(observe)) });
    let request = with_token(UnboundedReceiverStream::new(rx), "seat-token", token)?;
    let events = client.play(request).await?.into_inner();
    Ok(Call { tx, events })
}

/// Returns the end of the match for the seat of `token` on `channel`, or `None`
/// when `stop` fired first. Joins with `name`, plays on a Play stream, and after a
/// dropped connection or a retryable status joins again and resumes after the
/// last sequence seen (`progress`, which may come from a call that failed
/// mid-match). Fails with `SeatError::Refused` for a status no retry can change,
/// and `SeatError::GaveUp` when the server stays away for the progress's budget.
pub async fn play_seat<S: Strategy + ?Sized>(
    channel: Channel,
    token: &str,
    name: &str,
    strategy: &mut S,
    progress: &mut Progress,
    log: &Log,
    mut stop: Stop,
) -> Result<Option<MatchEnd>, SeatError> {
    let mut client = SeatClient::new(channel);
    let mut rejoin = progress.last_sequence > 0;
    loop {
        if stop.is_stopped() {
            return Ok(None);
        }
        let failure =
            match attempt(&mut client, token, name, strategy, progress, log, &mut stop, rejoin).await {
                Ok(Followed::Ended(end)) => return Ok(Some(*end)),
                Ok(Followed::Stopped) => return Ok(None),
                Ok(Followed::Closed) => "the stream closed before the match ended".to_string(),
                Err(status) if is_retryable(status.code()) => status_line(&status),
                Err(status) => return Err(SeatError::Refused(status)),
            };
        rejoin = true;
        let Some(pause) = progress.backoff.next_pause() else {
            return Err(SeatError::GaveUp(progress.backoff.budget(), failure));
        };
        log.line(
            "reconnecting",
            format_args!(
                "reason={failure:?} pause_ms={} after_sequence={}",
                pause.as_millis(),
                progress.last_sequence
            ),
        );
        if !stop.sleep(pause).await {
            return Ok(None);
        }
    }
}

/// Returns what one Join and Play call came to.
#[allow(clippy::too_many_arguments)]
async fn attempt<S: Strategy + ?Sized>(
    client: &mut SeatClient<Channel>,
    token: &str,
    name: &str,
    strategy: &mut S,
    progress: &mut Progress,
    log: &Log,
    stop: &mut Stop,
    rejoin: bool,
) -> Result<Followed, Status> {
    let join = pb::JoinRequest { name: name.to_string(), client_seed: progress.client_seed.clone() };
    let joined = client.join(with_token(join, "seat-token", token)?).await?.into_inner();
    log.line(
        if rejoin { "rejoined" } else { "joined" },
        format_args!(
            "match={} seat={} colour={} players={} after_sequence={}",
            joined.match_id, joined.seat, joined.colour, joined.players, progress.last_sequence
        ),
    );
    let mut call = open_play(client, token, progress.last_sequence).await?;
    follow(&mut call, strategy, progress, log, stop).await
}

/// Returns `text` cut to NOTE_LIMIT bytes of UTF-8, at a character boundary.
pub fn fit_note(text: &str) -> &str {
    if text.len() <= NOTE_LIMIT {
        return text;
    }
    let mut end = NOTE_LIMIT;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

/// The seat's open decision, as far as this stream knows, and the options sent.
struct Open {
    decision: Decision,
    tried: Vec<usize>,
}

/// Follows the seat's events on `call` (its first message already sent) to the
/// match's end, answering each decision with `strategy`. Returns the end, `Closed`
/// when the stream closed first, `Stopped` when `stop` fired; the stream's status
/// when it broke.
pub(crate) async fn follow<S: Strategy + ?Sized>(
    call: &mut Call,
    strategy: &mut S,
    progress: &mut Progress,
    log: &Log,
    stop: &mut Stop,
) -> Result<Followed, Status> {
    let mut open: Option<Open> = None;
    let mut my_seat: Option<u32> = None;
    let mut match_id = String::new();
    loop {
        let message = tokio::select! {
            message = call.events.message() => message?,
            _ = stop.wait() => return Ok(Followed::Stopped),
        };
        let Some(message) = message else {
            return Ok(Followed::Closed);
        };
        let received = Instant::now();
        // Any message proves the connection: the reconnection budget starts afresh.
        progress.backoff.reset();
        for event in message.events {
            progress.last_sequence = progress.last_sequence.max(event.sequence);
            strategy.observe(&event);
            let Some(kind) = event.event else { continue };
            use pb::seat_event::Event;
            match kind {
                Event::Snapshot(snapshot) => {
                    let view = snapshot.view.as_ref();
                    my_seat = view.and_then(|v| v.seat);
                    match_id = snapshot.match_id.clone();
                    log.line(
                        "snapshot",
                        format_args!(
                            "status={:?} sequence={} missed={} open_decision={:?}",
                            snapshot.status(),
                            event.sequence,
                            snapshot.history.len(),
                            snapshot.decision.as_ref().map(|d| d.decision_id.as_str()).unwrap_or("")
                        ),
                    );
                    open = None;
                    for missed in &snapshot.history {
                        progress.last_sequence = progress.last_sequence.max(missed.sequence);
                        strategy.observe(missed);
                    }
                    if let Some(request) = &snapshot.decision {
                        open = Some(decide(call, strategy, Decision::from_wire(request, received), log));
                    }
                }
                Event::Decision(request) => {
                    open = Some(decide(call, strategy, Decision::from_wire(&request, received), log));
                }
                Event::ActResult(result) => {
                    let mine = open.as_ref().is_some_and(|o| o.decision.id == result.decision_id);
                    if result.accepted {
                        if mine {
                            open = None;
                        }
                        continue;
                    }
                    log.line(
                        "answer_refused",
                        format_args!(
                            "decision={} refusal={:?} rule={:?} message={:?}",
                            result.decision_id,
                            result.refusal(),
                            result.rule,
                            result.message
                        ),
                    );
                    // An option that does not exist or is not legal now leaves the
                    // decision open: answer with an option not tried yet. Any other
                    // refusal means it is closed.
                    let leaves_open =
                        matches!(result.refusal(), pb::Refusal::Illegal | pb::Refusal::NoSuchOption);
                    if mine && leaves_open {
                        if let Some(o) = open.as_mut() {
                            if let Some(untried) =
                                (0..o.decision.options.len()).find(|i| !o.tried.contains(i))
                            {
                                o.tried.push(untried);
                                send_answer(
                                    call,
                                    &o.decision,
                                    &Answer::new(untried, "previous answer refused"),
                                    log,
                                );
                                continue;
                            }
                        }
                    }
                    if mine {
                        open = None;
                    }
                }
                Event::DeadlinePassed(passed) => {
                    if Some(passed.seat) != my_seat {
                        continue;
                    }
                    log.line(
                        "deadline_passed",
                        format_args!(
                            "decision={} strikes={} autopilot={}",
                            passed.decision_id, passed.strikes, passed.autopilot
                        ),
                    );
                    if open.as_ref().is_some_and(|o| o.decision.id == passed.decision_id) {
                        open = None;
                    }
                }
                Event::MatchEnded(ended) => {
                    let status = match ended.status() {
                        pb::MatchStatus::Finished => EndStatus::Finished,
                        pb::MatchStatus::Aborted => EndStatus::Aborted,
                        _ => EndStatus::Other(ended.status),
                    };
                    log.line(
                        "match_ended",
                        format_args!(
                            "status={status:?} winners={:?} delivered={:?} ranks={:?} reason={:?}",
                            ended.winners, ended.delivered, ended.ranks, ended.reason
                        ),
                    );
                    return Ok(Followed::Ended(Box::new(MatchEnd {
                        match_id,
                        seat: my_seat,
                        status,
                        winners: ended.winners.clone(),
                        delivered: ended.delivered.clone(),
                        ranks: ended.ranks.clone(),
                        reason: ended.reason.clone(),
                        view: View::from_wire(ended.view.as_ref()),
                    })));
                }
                _ => {} // turns, rounds, resolutions: the next decision's view holds them
            }
        }
    }
}

/// Returns the open decision after answering it with `strategy`'s choice.
fn decide<S: Strategy + ?Sized>(call: &Call, strategy: &mut S, decision: Decision, log: &Log) -> Open {
    let mut answer = strategy.decide(&decision);
    if answer.option >= decision.options.len() {
        answer = Answer::new(0, format!("option {} out of range: {}", answer.option, answer.note));
    }
    send_answer(call, &decision, &answer, log);
    Open { tried: vec![answer.option], decision }
}

/// Sends `answer` to `decision` up the call, with its note, and logs it.
fn send_answer(call: &Call, decision: &Decision, answer: &Answer, log: &Log) {
    let act = pb::ActRequest {
        decision_id: decision.id.clone(),
        choice: Some(pb::act_request::Choice::Option(answer.option as u32)),
        note: fit_note(&answer.note).to_string(),
    };
    // A closed sending side shows as the stream's end, read next.
    let _ = call.tx.send(pb::PlayRequest { message: Some(pb::play_request::Message::Act(act)) });
    let choice = decision.options.get(answer.option).map(|c| c.describe()).unwrap_or_default();
    log.line(
        "decision",
        format_args!(
            "decision={} kind={:?} round={} option={} of={} choice={choice:?} reason={:?} default_in_ms={}",
            decision.id,
            decision.kind,
            decision.view.round,
            answer.option,
            decision.options.len(),
            answer.note,
            decision.default_at().saturating_duration_since(Instant::now()).as_millis()
        ),
    );
}

/// Returns true for the status a server gives a call it does not offer.
pub(crate) fn unimplemented(status: &Status) -> bool {
    status.code() == Code::Unimplemented
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_note_is_cut_to_its_limit_at_a_character_boundary() {
        assert_eq!(fit_note("why"), "why");
        let long = "é".repeat(NOTE_LIMIT); // two bytes each
        let cut = fit_note(&long);
        assert_eq!(cut.len(), NOTE_LIMIT);
        let odd = format!("a{long}");
        assert_eq!(fit_note(&odd).len(), NOTE_LIMIT - 1);
    }
}
