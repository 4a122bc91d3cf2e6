//! Stopping, backing off, and logging: what the seat and ladder loops share.

use std::collections::hash_map::RandomState;
use std::fmt::Display;
use std::hash::{BuildHasher, Hasher};
use std::time::{Duration, Instant};

use tokio::sync::watch;
use tonic::Code;

/// The side that stops: `stop()` ends every loop watching its `Stop`s.
#[derive(Debug)]
pub struct Stopper(watch::Sender<bool>);

/// A loop's view of its `Stopper`: cloned freely, one per task.
#[derive(Clone, Debug)]
pub struct Stop(watch::Receiver<bool>);

/// Returns a stopper and the stop it sets.
pub fn stop_pair() -> (Stopper, Stop) {
    let (tx, rx) = watch::channel(false);
    (Stopper(tx), Stop(rx))
}

impl Stopper {
    /// Stops every loop that watches this stopper.
    pub fn stop(&self) {
        self.0.send_replace(true);
    }

    /// Returns another stop of this stopper.
    pub fn watcher(&self) -> Stop {
        Stop(self.0.subscribe())
    }
}

impl Stop {
    /// Returns a stop that never fires.
    pub fn never() -> Stop {
        let (tx, rx) = watch::channel(false);
        // The sender is kept alive for good, so that `wait` pends forever.
        std::mem::forget(tx);
        Stop(rx)
    }

    /// Returns true once stopped.
    pub fn is_stopped(&self) -> bool {
        *self.0.borrow()
    }

    /// Returns once stopped (at once if already; never if the stopper is gone
    /// without stopping).
    pub async fn wait(&mut self) {
        if self.0.wait_for(|stopped| *stopped).await.is_err() {
            std::future::pending::<()>().await;
        }
    }

    /// Sleeps for `pause`; returns false when stopped first.
    pub async fn sleep(&mut self, pause: Duration) -> bool {
        tokio::select! {
            _ = tokio::time::sleep(pause) => true,
            _ = self.wait() => false,
        }
    }
}

/// Returns a random number, different in each call (no generator crate needed:
/// std's hash keys are drawn from the system's randomness).
pub fn random_u64() -> u64 {
    let mut hasher = RandomState::new().build_hasher();
    hasher.write_u128(Instant::now().elapsed().as_nanos());
    hasher.finish()
}

/// Reconnection pauses: exponential from 100 ms, capped at 2 s, with jitter so
/// that many bots do not retry in step; and the budget of time without a server
/// before giving up.
#[derive(Clone, Debug)]
pub struct Backoff {
    attempt: u32,
    failing_since: Option<Instant>,
    give_up_after: Duration,
}

impl Backoff {
    /// Returns a backoff that gives up after `give_up_after` without a server.
    pub fn new(give_up_after: Duration) -> Backoff {
        Backoff { attempt: 0, failing_since: None, give_up_after }
    }

    /// Starts afresh: the server answered.
    pub fn reset(&mut self) {
        self.attempt = 0;
        self.failing_since = None;
    }

    /// Returns the next pause, or `None` when the server has been away for longer
    /// than the budget.
    pub fn next_pause(&mut self) -> Option<Duration> {
        let since = *self.failing_since.get_or_insert_with(Instant::now);
        if since.elapsed() > self.give_up_after {
            return None;
        }
        let base = 100u64.saturating_mul(1 << self.attempt.min(5)).min(2000);
        self.attempt += 1;
        let jitter = random_u64() % (base / 2 + 1);
        Some(Duration::from_millis(base / 2 + jitter))
    }

    /// Returns the budget without a server.
    pub fn budget(&self) -> Duration {
        self.give_up_after
    }
}

/// Returns true for a status after which the same call may succeed later: the
/// server restarting, draining or shedding load, or the connection dropping.
pub fn is_retryable(code: Code) -> bool {
    matches!(
        code,
        Code::Cancelled
            | Code::Unknown
            | Code::DeadlineExceeded
            | Code::ResourceExhausted
            | Code::Aborted
            | Code::Internal
            | Code::Unavailable
    )
}

/// Returns a status as one line: `UNAVAILABLE: the message`.
pub fn status_line(status: &tonic::Status) -> String {
    let name = format!("{:?}", status.code());
    let mut upper = String::new();
    for (i, ch) in name.chars().enumerate() {
        if ch.is_uppercase() && i > 0 {
            upper.push('_');
        }
        upper.push(ch.to_ascii_uppercase());
    }
    format!("{upper}: {}", status.message())
}

/// One line of the bot's log on stderr per event: `starter event=... key=value ...`.
#[derive(Clone, Debug)]
pub struct Log {
    prefix: String,
}

impl Log {
    /// Returns a log whose lines begin with `prefix`.
    pub fn new(prefix: impl Into<String>) -> Log {
        Log { prefix: prefix.into() }
    }

    /// Returns a log whose lines also carry `field`.
    pub fn with(&self, field: impl Display) -> Log {
        Log { prefix: format!("{} {field}", self.prefix) }
    }

    /// Writes one line: the prefix, the event, its details.
    pub fn line(&self, event: &str, details: impl Display) {
        let details = details.to_string();
        if details.is_empty() {
            eprintln!("{} event={event}", self.prefix);
        } else {
            eprintln!("{} event={event} {details}", self.prefix);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pauses_grow_from_about_100_ms_to_at_most_2_s_and_stop_past_the_budget() {
        let mut backoff = Backoff::new(Duration::from_secs(60));
        let pauses: Vec<Duration> = (0..8).map(|_| backoff.next_pause().unwrap()).collect();
        assert!(pauses[0] >= Duration::from_millis(50) && pauses[0] <= Duration::from_millis(100));
        assert!(pauses.iter().all(|p| *p <= Duration::from_secs(2)));
        assert!(pauses[7] >= Duration::from_secs(1));
        backoff.reset();
        assert!(backoff.next_pause().unwrap() <= Duration::from_millis(100));

        let mut none = Backoff::new(Duration::ZERO);
        none.next_pause();
        std::thread::sleep(Duration::from_millis(2));
        assert_eq!(none.next_pause(), None);
    }

    #[test]
    fn a_status_line_names_the_code_as_grpc_does() {
        let status = tonic::Status::deadline_exceeded("late");
        assert_eq!(status_line(&status), "DEADLINE_EXCEEDED: late");
    }
}
