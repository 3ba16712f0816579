//! `--ssl-ca-cert` and `--insecure-skip-tls-verify`: the CA file read and checked before the run.

use std::path::PathBuf;

use anyhow::{Context, Result, ensure};

/// Largest `--ssl-ca-cert` file read: 16 MiB (a full system bundle is about 200 KiB).
pub const MAX_CA_FILE_BYTES: u64 = 16 << 20;

/// How `https://` servers are verified: the system's roots and the bundled Mozilla roots, plus
/// the certificates of `--ssl-ca-cert`; or nothing at all with `--insecure-skip-tls-verify`.
#[derive(Clone, Debug, Default)]
pub struct TlsOptions {
    /// `--ssl-ca-cert`, as given.
    pub ca_file: Option<PathBuf>,
    /// The certificates it holds (DER), each checked to be usable as a trust anchor.
    pub ca_certs: Vec<rustls::pki_types::CertificateDer<'static>>,
    /// `--insecure-skip-tls-verify`.
    pub insecure: bool,
}

impl TlsOptions {
    /// `--ssl-ca-cert` (read and checked here, before the run) and `--insecure-skip-tls-verify`.
    pub fn of(ca_file: Option<&PathBuf>, insecure: bool) -> Result<TlsOptions> {
        Ok(TlsOptions {
            ca_certs: ca_file.map(|f| ca_certificates(f)).transpose()?.unwrap_or_default(),
            ca_file: ca_file.cloned(),
            insecure,
        })
    }
}

/// Reads and checks a `--ssl-ca-cert` file: PEM certificates, at least one, each a valid
/// trust anchor.
pub fn ca_certificates(path: &std::path::Path) -> Result<Vec<rustls::pki_types::CertificateDer<'static>>> {
    use rustls::pki_types::CertificateDer;
    use rustls::pki_types::pem::PemObject;
    use std::io::Read;
    let shown = path.display();
    let mut bytes = Vec::new();
    std::fs::File::open(path)
        .and_then(|f| f.take(MAX_CA_FILE_BYTES + 1).read_to_end(&mut bytes))
        .with_context(|| format!("--ssl-ca-cert {shown}: cannot read the file"))?;
    ensure!(
        bytes.len() as u64 <= MAX_CA_FILE_BYTES,
        "--ssl-ca-cert {shown}: larger than {} MiB; accepted is a PEM file of CA certificates",
        MAX_CA_FILE_BYTES >> 20
    );
    let certs = CertificateDer::pem_slice_iter(&bytes)
        .collect::<std::result::Result<Vec<_>, _>>()
        .map_err(|e| anyhow::anyhow!("--ssl-ca-cert {shown}: not a valid PEM file ({e})"))?;
    ensure!(
        !certs.is_empty(),
        "--ssl-ca-cert {shown}: holds no certificate; accepted is a PEM file with \
         -----BEGIN CERTIFICATE----- blocks (a DER file can be converted with \
         `openssl x509 -inform der -in FILE -out FILE.pem`)"
    );
    for (i, c) in certs.iter().enumerate() {
        let mut store = rustls::RootCertStore::empty();
        store.add(c.clone()).map_err(|e| {
            anyhow::anyhow!(
                "--ssl-ca-cert {shown}: certificate {} of {} cannot be used as a CA: {e}",
                i + 1,
                certs.len()
            )
        })?;
    }
    Ok(certs)
}
