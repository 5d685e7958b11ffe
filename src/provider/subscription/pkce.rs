//! PKCE (RFC 7636) for the browser sign-ins: a random verifier, its S256 challenge, and random
//! `state` values, all base64url without padding.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use sha2::{Digest, Sha256};

/// `n` random bytes from the operating system.
pub(crate) fn random_bytes(n: usize) -> Result<Vec<u8>, String> {
    use std::io::Read;
    let mut buf = vec![0u8; n];
    std::fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut buf))
        .map_err(|e| format!("could not read random bytes: {e}"))?;
    Ok(buf)
}

/// A verifier and its challenge.
pub(crate) struct Pkce {
    pub verifier: String,
    pub challenge: String,
}

impl Pkce {
    pub(crate) fn new() -> Result<Pkce, String> {
        let verifier = URL_SAFE_NO_PAD.encode(random_bytes(32)?);
        Ok(Pkce {
            challenge: challenge(&verifier),
            verifier,
        })
    }
}

/// The S256 challenge of `verifier`.
pub(crate) fn challenge(verifier: &str) -> String {
    URL_SAFE_NO_PAD.encode(Sha256::digest(verifier.as_bytes()))
}

/// A random `state` for one sign-in.
pub(crate) fn state() -> Result<String, String> {
    Ok(URL_SAFE_NO_PAD.encode(random_bytes(16)?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_challenge_is_rfc_7636s() {
        // RFC 7636, appendix B.
        assert_eq!(
            challenge("dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk"),
            "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"
        );
        let a = Pkce::new().unwrap();
        let b = Pkce::new().unwrap();
        assert_ne!(a.verifier, b.verifier);
        assert_eq!(a.verifier.len(), 43);
        assert_eq!(a.challenge, challenge(&a.verifier));
    }
}
