//! Connecting to a server: plaintext, or TLS trusting the certificates of a CA file.

use std::fmt;
use std::path::Path;
use std::time::Duration;

#[cfg(feature = "tls")]
use tonic::transport::{Certificate, ClientTlsConfig};
use tonic::transport::{Channel, Endpoint};

/// How to reach a server: the same credentials serve every host of a ladder
/// (`Assignment.host_address`).
#[derive(Clone, Debug, Default)]
pub struct Connector {
    #[cfg(feature = "tls")]
    tls: Option<ClientTlsConfig>,
}

/// Why a channel could not be made.
#[derive(Debug)]
pub struct ConnectError(pub String);

impl fmt::Display for ConnectError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ConnectError {}

impl Connector {
    /// Returns a connector for plaintext connections.
    pub fn plaintext() -> Connector {
        Connector::default()
    }

    /// Returns a connector for TLS connections that trust the PEM certificates in
    /// `ca_file`; fails when the file cannot be read.
    #[cfg(feature = "tls")]
    pub fn tls_with_ca(ca_file: &Path) -> Result<Connector, ConnectError> {
        let pem = std::fs::read(ca_file).map_err(|e| ConnectError(format!("{}: {e}", ca_file.display())))?;
        let tls = ClientTlsConfig::new().ca_certificate(Certificate::from_pem(pem));
        Ok(Connector { tls: Some(tls) })
    }

    /// Fails: this build of the kit has no TLS (built without the `tls` feature).
    #[cfg(not(feature = "tls"))]
    pub fn tls_with_ca(_ca_file: &Path) -> Result<Connector, ConnectError> {
        Err(ConnectError("this build has no TLS: build the kit with its default `tls` feature".into()))
    }

    /// Returns true when this connector speaks TLS.
    pub fn is_tls(&self) -> bool {
        #[cfg(feature = "tls")]
        return self.tls.is_some();
        #[cfg(not(feature = "tls"))]
        return false;
    }

    /// Returns a channel to `address` (HOST:PORT). It connects on first use and
    /// again after the connection drops, so a server that is away shows as calls
    /// failing with UNAVAILABLE, which the seat and ladder loops retry. Fails only
    /// for an address that is no HOST:PORT.
    pub fn channel(&self, address: &str) -> Result<Channel, ConnectError> {
        let scheme = if self.is_tls() { "https" } else { "http" };
        let bad = |e: &dyn fmt::Display| ConnectError(format!("bad server address {address:?}: {e}"));
        #[allow(unused_mut)]
        let mut endpoint = Endpoint::from_shared(format!("{scheme}://{address}"))
            .map_err(|e| bad(&e))?
            .connect_timeout(Duration::from_secs(5))
            .tcp_nodelay(true);
        #[cfg(feature = "tls")]
        if let Some(tls) = &self.tls {
            endpoint = endpoint.tls_config(tls.clone()).map_err(|e| bad(&e))?;
        }
        Ok(endpoint.connect_lazy())
    }
}
