//! The starter bot: one seat to the end of its match, or the ladder until stopped.
//!
//!   starter --server HOST:PORT --token TOKEN [--tls-ca FILE]
//!   starter --server HOST:PORT --ladder --name NAME --key-file FILE [--version V] [--tls-ca FILE]
//!
//! See `starter --help` and kits/rust/README.md.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use mammamia_kit::control::status_line;
use mammamia_kit::{
    play_ladder, play_seat, register, stop_pair, Connector, Entry, Left, Log, Progress, Starter,
};

const USAGE: &str = "usage: starter --server HOST:PORT --token TOKEN [--tls-ca FILE]
       starter --server HOST:PORT --ladder --name NAME --key-file FILE [--version V] [--tls-ca FILE]

Plays Mamma Mia! on an arena server: one seat of one match (--token), or every
match the ladder assigns (--ladder) until stopped. It plays an order when the
public oven suffices for it, else its most plentiful ingredient, keeps two orders
in hand, and bakes when it can. One line per decision goes to stderr.

options:
  --server HOST:PORT  the server
  --token TOKEN       the seat token of one match
  --ladder            enter the ladder and play every assigned match
  --name NAME         with --ladder: the bot's registered name
  --key-file FILE     with --ladder: the file holding the bot's key; when it is
                      absent the name is registered and its key written there (0600)
  --version V         with --ladder: the version that enters (default: starter-<kit version>)
  --tls-ca FILE       connect with TLS, trusting the PEM certificates in FILE
  --retry-for SEC     give up after SEC seconds without the server (default 60)
  -h, --help          show this help and exit

exit status: 0 when the match finished (with --ladder: when stopped by SIGTERM or
SIGINT, or replaced by a newer entry of the same name), 0 too when stopped by a
signal, 1 when the server refused the bot, stayed away or aborted the match,
2 for a bad command line.";

/// The checked command line.
struct Settings {
    server: String,
    token: Option<String>,
    ladder: bool,
    name: Option<String>,
    key_file: Option<PathBuf>,
    version: String,
    tls_ca: Option<PathBuf>,
    retry_for: Duration,
}

/// Returns the settings from the arguments, or the message of a bad command line
/// (`Ok(None)` for --help).
fn settings_from(args: &[String]) -> Result<Option<Settings>, String> {
    let mut s = Settings {
        server: String::new(),
        token: None,
        ladder: false,
        name: None,
        key_file: None,
        version: format!("starter-{}", env!("CARGO_PKG_VERSION")),
        tls_ca: None,
        retry_for: Duration::from_secs(60),
    };
    let mut version_given = false;
    let mut args = args.iter();
    while let Some(arg) = args.next() {
        // Values are taken whole, so a token beginning with '-' is a value too.
        let (flag, inline) = match arg.split_once('=') {
            Some((flag, value)) if flag.starts_with("--") => (flag, Some(value.to_string())),
            _ => (arg.as_str(), None),
        };
        let mut value = || -> Result<String, String> {
            match inline.clone() {
                Some(value) => Ok(value),
                None => args.next().cloned().ok_or_else(|| format!("{flag} needs a value")),
            }
        };
        match flag {
            "-h" | "--help" => return Ok(None),
            "--server" => s.server = value()?,
            "--token" => s.token = Some(value()?),
            "--ladder" => s.ladder = true,
            "--name" => s.name = Some(value()?),
            "--key-file" => s.key_file = Some(PathBuf::from(value()?)),
            "--version" => {
                s.version = value()?;
                version_given = true;
            }
            "--tls-ca" => s.tls_ca = Some(PathBuf::from(value()?)),
            "--retry-for" => {
                let text = value()?;
                let secs: f64 = text
                    .parse()
                    .map_err(|_| format!("--retry-for must be a number of seconds, not {text:?}"))?;
                if !(secs >= 0.0 && secs.is_finite()) {
                    return Err(format!("--retry-for must be a non-negative number, not {text:?}"));
                }
                s.retry_for = Duration::from_secs_f64(secs);
            }
            other => return Err(format!("unknown argument {other:?}")),
        }
    }
    if s.server.is_empty() {
        return Err("--server HOST:PORT is required".into());
    }
    if s.ladder {
        if s.name.is_none() || s.key_file.is_none() {
            return Err("--ladder needs --name NAME and --key-file FILE".into());
        }
        if s.token.is_some() {
            return Err("--token goes without --ladder".into());
        }
        let ok = |c: char| c.is_ascii_alphanumeric() || "-_.+".contains(c);
        if s.version.len() > 32 || !s.version.chars().all(ok) {
            return Err(format!(
                "--version must be up to 32 letters, digits, '-', '_', '.' or '+', not {:?}",
                s.version
            ));
        }
    } else {
        if s.token.is_none() {
            return Err("--token TOKEN is required (or --ladder)".into());
        }
        if version_given || s.key_file.is_some() {
            return Err("--version and --key-file go with --ladder".into());
        }
    }
    Ok(Some(s))
}

/// Returns the bot's key: read from `path`, or, when the file is absent, the key
/// of `name` newly registered, written to `path` with mode 0600.
async fn key_for(
    connector: &Connector,
    server: &str,
    name: &str,
    path: &Path,
    log: &Log,
) -> Result<String, String> {
    match std::fs::read_to_string(path) {
        Ok(text) => return Ok(text.trim().to_string()),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => {}
        Err(error) => return Err(format!("cannot read the key file {}: {error}", path.display())),
    }
    let channel = connector.channel(server).map_err(|e| e.to_string())?;
    let key = register(channel, name)
        .await
        .map_err(|status| format!("cannot register {name:?}: {}", status_line(&status)))?;
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    let mut file = options
        .open(path)
        .map_err(|error| format!("cannot write the key file {}: {error}", path.display()))?;
    writeln!(file, "{key}")
        .map_err(|error| format!("cannot write the key file {}: {error}", path.display()))?;
    log.line("registered", format_args!("name={name} key_file={}", path.display()));
    Ok(key)
}

/// Returns the exit status after playing as `settings` say.
async fn run(settings: Settings) -> ExitCode {
    let name = settings.name.clone().unwrap_or_else(|| "rust-starter".into());
    let log = Log::new(format!("starter bot={name}"));
    let connector = match &settings.tls_ca {
        Some(ca) => match Connector::tls_with_ca(ca) {
            Ok(connector) => connector,
            Err(error) => {
                eprintln!("starter: --tls-ca {error}");
                return ExitCode::from(2);
            }
        },
        None => Connector::plaintext(),
    };
    let (stopper, stop) = stop_pair();
    // SIGTERM or SIGINT: leave at once, exit 0 (a seat left is played by the
    // server's default policy until the bot comes back).
    let signals = tokio::spawn(async move {
        let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).ok();
        let terminated = async {
            match term.as_mut() {
                Some(term) => term.recv().await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            _ = tokio::signal::ctrl_c() => {}
            _ = terminated => {}
        }
        stopper.stop();
    });

    let status = if settings.ladder {
        let key_file = settings.key_file.as_deref().expect("checked: --ladder has --key-file");
        let key = match key_for(&connector, &settings.server, &name, key_file, &log).await {
            Ok(key) => key,
            Err(message) => {
                eprintln!("starter: {message}");
                return ExitCode::from(1);
            }
        };
        let entry = Entry {
            name: name.clone(),
            key,
            version: settings.version.clone(),
            retry_for: settings.retry_for,
        };
        match play_ladder(&connector, &settings.server, &entry, Starter, &log, stop).await {
            Ok((played, left)) => {
                let why = if left == Left::Replaced { "replaced by a newer entry" } else { "stopped" };
                eprintln!("starter: left the ladder ({why}) after {played} matches");
                ExitCode::SUCCESS
            }
            Err(error) => {
                eprintln!("starter: {error}");
                ExitCode::from(1)
            }
        }
    } else {
        let token = settings.token.as_deref().expect("checked: a seat has --token");
        let channel = match connector.channel(&settings.server) {
            Ok(channel) => channel,
            Err(error) => {
                eprintln!("starter: {error}");
                return ExitCode::from(2);
            }
        };
        let mut progress = Progress::new(settings.retry_for);
        match play_seat(channel, token, &name, &mut Starter, &mut progress, &log, stop).await {
            Ok(Some(end)) if end.finished() => ExitCode::SUCCESS,
            Ok(Some(end)) => {
                eprintln!("starter: the match was aborted: {}", end.reason);
                ExitCode::from(1)
            }
            Ok(None) => ExitCode::SUCCESS,
            Err(error) => {
                eprintln!("starter: {error}");
                ExitCode::from(1)
            }
        }
    };
    signals.abort();
    status
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let settings = match settings_from(&args) {
        Ok(Some(settings)) => settings,
        Ok(None) => {
            println!("{USAGE}");
            return ExitCode::SUCCESS;
        }
        Err(message) => {
            eprintln!("starter: {message}\n{}", USAGE.split("\n\n").next().unwrap_or(USAGE));
            return ExitCode::from(2);
        }
    };
    let runtime = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("starter: cannot start the runtime: {error}");
            return ExitCode::from(1);
        }
    };
    runtime.block_on(run(settings))
}
