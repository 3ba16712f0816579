//! Where requests go: every `--url` checked, each one's URL and headers (URL credentials as HTTP
//! Basic authentication), the URLs as they may be shown, and the run's secrets to mask.

use anyhow::{Result, ensure};

use super::limits::MAX_URLS;
use super::model::ReplayPlan;
use super::secrets::{basic_auth, redact_url, split_credentials};
use crate::io::http::is_credential_header;
use crate::profile::client;

impl ReplayPlan {
    /// The URL requests go to (credentials removed) and the headers they carry: the user's,
    /// plus HTTP Basic authentication from URL credentials when no API key is given.
    #[cfg_attr(not(test), allow(dead_code))]
    pub fn request_target(&self) -> (String, Vec<(String, String)>) {
        self.target_of(&self.target.url)
    }

    /// [`Self::request_target`] of every `--url`, in order.
    pub fn request_targets(&self) -> Vec<(String, Vec<(String, String)>)> {
        self.target.urls.iter().map(|u| self.target_of(u)).collect()
    }

    fn target_of(&self, url: &str) -> (String, Vec<(String, String)>) {
        let (url, userinfo) = split_credentials(url);
        let mut headers = self.target.headers.clone();
        if let (Some(u), None) = (userinfo, &self.target.api_key) {
            headers.insert(0, ("Authorization".to_owned(), basic_auth(&u)));
        }
        (url, headers)
    }

    /// Every `--url` as it may be shown (credentials redacted), in order.
    pub fn shown_urls(&self) -> Vec<String> {
        self.target.urls.iter().map(|u| redact_url(u.trim_end_matches('/'))).collect()
    }

    /// The URL as it may be shown (credentials redacted).
    pub fn shown_url(&self) -> String {
        client::join_url(&redact_url(&self.target.url), &self.target.path)
    }

    /// Every secret of the run (API key, credential header values, URL password): masked in
    /// whatever a server echoes back before it is written.
    pub fn secrets(&self) -> Vec<String> {
        let mut s: Vec<String> = self.target.api_key.iter().cloned().collect();
        s.extend(self.target.headers.iter().filter(|(k, _)| is_credential_header(k)).map(|(_, v)| v.trim().to_owned()));
        for url in &self.target.urls {
            if let (_, Some(userinfo)) = split_credentials(url) {
                s.push(userinfo.split_once(':').map_or(userinfo.as_str(), |(_, p)| p).to_owned());
                // What a server echoing the Authorization header would show.
                s.push(basic_auth(&userinfo).trim_start_matches("Basic ").to_owned());
                s.push(userinfo);
            }
        }
        s.retain(|v| v.len() >= 4);
        s
    }
}

/// Every `--url`, with `http://` added where it has no scheme (AIPerf accepts `localhost:8000`).
pub(super) fn urls(given: &[String]) -> Result<Vec<String>> {
    ensure!(
        !given.is_empty() && given.len() <= MAX_URLS,
        "--url given {} times: accepted is 1 to {MAX_URLS} URLs",
        given.len()
    );
    given
        .iter()
        .map(|u| {
            let mut url = u.trim().to_owned();
            if !url.contains("://") {
                url = format!("http://{url}");
            }
            ensure!(
                url.starts_with("http://") || url.starts_with("https://"),
                "--url {}: accepted is an http:// or https:// URL",
                redact_url(&url)
            );
            Ok(url)
        })
        .collect()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::profile::plan::replay::tests::{err, plan};

    #[test]
    fn secrets_are_redacted_in_the_config_and_listed_for_masking() {
        let p = plan(&[
            "-u",
            "https://alice:hunter22@example.test:9/x",
            "--api-key",
            "sk-secret-1",
            "-H",
            "X-Api-Key:abcd-1234",
            "-H",
            "X-Trace:visible",
        ])
        .unwrap();
        let cfg = p.cli_config().to_string();
        for s in ["hunter22", "alice", "sk-secret-1", "abcd-1234", "visible"] {
            assert!(!cfg.contains(s), "{s} leaked into {cfg}");
        }
        assert_eq!(p.shown_url(), "https://<redacted>@example.test:9/x/v1/chat/completions");
        let secrets = p.secrets();
        assert!(secrets.contains(&"sk-secret-1".to_owned()));
        assert!(secrets.contains(&"abcd-1234".to_owned()));
        assert!(secrets.contains(&"hunter22".to_owned()));
        assert!(!secrets.contains(&"visible".to_owned()));
    }

    #[test]
    fn url_credentials_become_basic_authentication() {
        let p = plan(&["-u", "http://alice:p%40ss@h:9"]).unwrap();
        let (url, headers) = p.request_target();
        assert_eq!(url, "http://h:9");
        assert_eq!(headers, vec![("Authorization".to_owned(), "Basic YWxpY2U6cEBzcw==".to_owned())]);
        let secrets = p.secrets();
        assert!(secrets.contains(&"p@ss".to_owned()) && secrets.contains(&"YWxpY2U6cEBzcw==".to_owned()));
        // An API key wins over URL credentials.
        let p = plan(&["-u", "http://alice:p%40ss@h:9", "--api-key", "sk-123456"]).unwrap();
        assert!(p.request_target().1.is_empty());
        assert_eq!(split_credentials("http://h/a@b"), ("http://h/a@b".to_owned(), None));
    }

    #[test]
    fn several_urls_each_normalized_with_their_own_credentials() {
        let p = plan(&["-u", "h1:9", "--url", "https://bob:s3cret-pw@h2", "http://h3/v1"]).unwrap();
        assert_eq!(p.target.urls, ["http://h1:9", "https://bob:s3cret-pw@h2", "http://h3/v1"]);
        assert_eq!(p.target.url, "http://h1:9");
        let targets = p.request_targets();
        assert_eq!(targets[1].0, "https://h2");
        assert_eq!(targets[1].1[0].0, "Authorization");
        assert!(targets[0].1.is_empty() && targets[2].1.is_empty());
        assert_eq!(p.shown_urls(), ["http://h1:9", "https://<redacted>@h2", "http://h3/v1"]);
        assert!(p.secrets().contains(&"s3cret-pw".to_owned()));
        let cfg = p.cli_config().to_string();
        assert!(cfg.contains("\"urls\"") && !cfg.contains("s3cret"), "{cfg}");
        assert_eq!(plan(&[]).unwrap().target.urls, ["http://localhost:8000"]);
        assert!(err(&["-u", "ftp://h"]).contains("--url ftp://h: accepted is an http:// or https:// URL"));
    }
}
