//! How `https://` servers are trusted: the system's certificate store (as `curl` and Python
//! see it, `SSL_CERT_FILE`/`SSL_CERT_DIR` included), the bundled Mozilla roots, and the
//! certificates of `--ssl-ca-cert`; or, with `--insecure-skip-tls-verify`, no verification of
//! the certificate at all (the handshake's signatures are still checked).

use std::sync::Arc;

use anyhow::{Context, Result};
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::CryptoProvider;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{ClientConfig, DigitallySignedStruct, RootCertStore, SignatureScheme};

/// What a client trusts.
#[derive(Clone, Debug, Default)]
pub struct Trust {
    /// Load the system's certificate store (skipped when no URL is `https://`: it costs
    /// tens of milliseconds).
    pub system_roots: bool,
    /// Extra trust anchors (`--ssl-ca-cert`).
    pub extra: Vec<CertificateDer<'static>>,
    /// Accept any certificate (`--insecure-skip-tls-verify`).
    pub insecure: bool,
}

/// The rustls configuration of `trust`.
pub fn client_config(trust: &Trust) -> Result<ClientConfig> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .context("cannot set up TLS")?;
    if trust.insecure {
        return Ok(builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(AnyCertificate(provider)))
            .with_no_client_auth());
    }
    Ok(builder.with_root_certificates(roots(trust)?).with_no_client_auth())
}

/// The bundled roots, the system's (unreadable ones skipped) and the extra ones.
fn roots(trust: &Trust) -> Result<RootCertStore> {
    let mut store = RootCertStore { roots: webpki_roots::TLS_SERVER_ROOTS.to_vec() };
    if trust.system_roots {
        // Errors (an unreadable file in the store) leave those certificates out, as curl does.
        let found = rustls_native_certs::load_native_certs();
        store.add_parsable_certificates(found.certs);
    }
    for (i, c) in trust.extra.iter().enumerate() {
        store.add(c.clone()).with_context(|| format!("--ssl-ca-cert: certificate {} cannot be used", i + 1))?;
    }
    Ok(store)
}

/// `--insecure-skip-tls-verify`: any certificate for any name; handshake signatures are still
/// verified with the provider's algorithms, so the connection is encrypted, not authenticated.
#[derive(Debug)]
struct AnyCertificate(Arc<CryptoProvider>);

impl ServerCertVerifier for AnyCertificate {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(message, cert, dss, &self.0.signature_verification_algorithms)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(message, cert, dss, &self.0.signature_verification_algorithms)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

/// What to do about a failed connection whose cause is TLS: a hint naming the flags, or `None`
/// when the error is not about TLS.
pub fn hint(e: &(dyn std::error::Error + 'static)) -> Option<String> {
    let mut cur: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(err) = cur {
        if let Some(t) = rustls_error(err) {
            return Some(match t {
                rustls::Error::InvalidCertificate(c) => format!(
                    "TLS: the server's certificate is not trusted ({c:?}); give its CA with --ssl-ca-cert PATH \
                     (PEM), or, in a lab only, --insecure-skip-tls-verify"
                ),
                other => format!("TLS handshake failed: {other}"),
            });
        }
        cur = err.source();
    }
    None
}

/// The rustls error of `e`, also inside (nested) `io::Error`s, whose `source` skips it.
fn rustls_error<'a>(e: &'a (dyn std::error::Error + 'static)) -> Option<&'a rustls::Error> {
    if let Some(t) = e.downcast_ref::<rustls::Error>() {
        return Some(t);
    }
    let inner = e.downcast_ref::<std::io::Error>()?.get_ref()?;
    rustls_error(inner as &(dyn std::error::Error + 'static))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn configs_build_with_and_without_verification() {
        use rustls::pki_types::pem::PemObject;
        let ca: Vec<CertificateDer<'static>> =
            CertificateDer::pem_file_iter(concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/fixtures/tls/ca.pem"))
                .unwrap()
                .collect::<std::result::Result<_, _>>()
                .unwrap();
        let n = roots(&Trust { extra: ca.clone(), ..Trust::default() }).unwrap().roots.len();
        assert_eq!(n, webpki_roots::TLS_SERVER_ROOTS.len() + 1);
        assert!(client_config(&Trust { extra: ca, system_roots: true, insecure: false }).is_ok());
        assert!(client_config(&Trust { insecure: true, ..Trust::default() }).is_ok());
    }

    #[test]
    fn only_tls_errors_get_a_hint() {
        let bad = rustls::Error::InvalidCertificate(rustls::CertificateError::UnknownIssuer);
        let io = std::io::Error::other(std::io::Error::new(std::io::ErrorKind::InvalidData, bad));
        let h = hint(&io).unwrap();
        assert!(h.contains("UnknownIssuer") && h.contains("--ssl-ca-cert") && h.contains("--insecure-skip-tls-verify"));
        assert!(hint(&std::io::Error::other("refused")).is_none());
    }
}
