//! TLS: a given certificate, or a self-signed one for `localhost`/`127.0.0.1` generated into
//! the data dir on first start and reused after.

use rustls::ServerConfig;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Where the certificate comes from.
#[derive(Debug, Clone)]
pub enum TlsSource {
    /// PEM files given on the command line.
    Files { cert: PathBuf, key: PathBuf },
    /// A self-signed certificate kept in this directory (created if missing).
    SelfSigned { dir: PathBuf },
}

fn invalid(message: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, message)
}

/// The certificate and key PEM of a source, generating a self-signed pair when needed.
pub fn load_pem(source: &TlsSource) -> io::Result<(String, String)> {
    match source {
        TlsSource::Files { cert, key } => Ok((read(cert)?, read(key)?)),
        TlsSource::SelfSigned { dir } => {
            let cert_path = dir.join("cert.pem");
            let key_path = dir.join("key.pem");
            if cert_path.exists() && key_path.exists() {
                return Ok((read(&cert_path)?, read(&key_path)?));
            }
            std::fs::create_dir_all(dir)?;
            let generated = rcgen::generate_simple_self_signed(vec![
                "localhost".to_string(),
                "127.0.0.1".to_string(),
            ])
            .map_err(|e| invalid(format!("cannot generate a certificate: {e}")))?;
            let cert = generated.cert.pem();
            let key = generated.signing_key.serialize_pem();
            std::fs::write(&cert_path, &cert)?;
            std::fs::write(&key_path, &key)?;
            #[cfg(unix)]
            {
                use std::os::unix::fs::PermissionsExt;
                std::fs::set_permissions(&key_path, std::fs::Permissions::from_mode(0o600))?;
            }
            tracing::info!(path = %cert_path.display(), "generated a self-signed certificate for localhost and 127.0.0.1");
            Ok((cert, key))
        }
    }
}

fn read(path: &Path) -> io::Result<String> {
    std::fs::read_to_string(path)
        .map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", path.display())))
}

/// A rustls server configuration (ring provider, HTTP/2 and HTTP/1.1) from PEM text.
pub fn server_config(cert_pem: &str, key_pem: &str) -> io::Result<Arc<ServerConfig>> {
    let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_slice_iter(cert_pem.as_bytes())
        .collect::<Result<_, _>>()
        .map_err(|e| invalid(format!("bad certificate PEM: {e}")))?;
    if certs.is_empty() {
        return Err(invalid("the certificate PEM holds no certificate".into()));
    }
    let key = PrivateKeyDer::from_pem_slice(key_pem.as_bytes())
        .map_err(|e| invalid(format!("bad key PEM: {e}")))?;
    let mut config =
        ServerConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
            .with_safe_default_protocol_versions()
            .map_err(|e| invalid(e.to_string()))?
            .with_no_client_auth()
            .with_single_cert(certs, key)
            .map_err(|e| invalid(format!("certificate and key do not fit: {e}")))?;
    // HTTP/1.1 only: its request line is where raw `<` and `>` are made acceptable
    // (see `lenient`); HTTP/2 header blocks cannot be rewritten that way.
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(Arc::new(config))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_self_signed_certificate_is_made_once_and_reused() {
        let dir = std::env::temp_dir().join(format!("brandhub-tls-{}", std::process::id()));
        let source = TlsSource::SelfSigned { dir: dir.clone() };
        let (cert, key) = load_pem(&source).unwrap();
        assert!(server_config(&cert, &key).is_ok());
        assert_eq!(load_pem(&source).unwrap().0, cert);
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn garbage_is_a_clear_error() {
        let error = server_config("not pem", "not pem").unwrap_err();
        assert!(error.to_string().contains("certificate"));
    }
}
