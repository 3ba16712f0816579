//! Credentials in URLs and headers: taken out of a URL for HTTP Basic authentication, redacted
//! wherever a URL is shown or written, and listed so that echoes of them are masked.

/// `user:password@` of a URL replaced, so that the URL can be shown and written.
pub fn redact_url(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else { return url.to_owned() };
    let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    match rest[..end].rfind('@') {
        Some(at) => format!("{scheme}://<redacted>@{}", &rest[at + 1..]),
        None => url.to_owned(),
    }
}

/// `scheme://user:password@host…` split into the URL without its credentials and the
/// `user:password` (percent-decoded), which is sent as HTTP Basic authentication, as curl and
/// aiohttp do.
pub fn split_credentials(url: &str) -> (String, Option<String>) {
    let Some((scheme, rest)) = url.split_once("://") else { return (url.to_owned(), None) };
    let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    match rest[..end].rfind('@') {
        Some(at) => (format!("{scheme}://{}", &rest[at + 1..]), Some(percent_decode(&rest[..at]))),
        None => (url.to_owned(), None),
    }
}

fn percent_decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let hex = |c: u8| (c as char).to_digit(16);
        match (b[i], b.get(i + 1).copied().and_then(hex), b.get(i + 2).copied().and_then(hex)) {
            (b'%', Some(h), Some(l)) => {
                out.push((h * 16 + l) as u8);
                i += 3;
            }
            (c, _, _) => {
                out.push(c);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The `Authorization` value of HTTP Basic authentication for `user:password`.
pub fn basic_auth(userinfo: &str) -> String {
    use base64::Engine as _;
    format!("Basic {}", base64::engine::general_purpose::STANDARD.encode(userinfo))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn url_redaction_keeps_what_is_not_a_credential() {
        assert_eq!(redact_url("http://h:1/a@b"), "http://h:1/a@b");
        assert_eq!(redact_url("http://u@h"), "http://<redacted>@h");
        assert_eq!(redact_url("h:1"), "h:1");
    }
}
