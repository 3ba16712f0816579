//! One complete run: its outputs checked against its input, the trace read while the tokenizer
//! loads, the HTTP transport built, the server readied (waited for, scraped, its prefix cache
//! emptied), then the [`phases`](super::phases) of the replay. A sweep, repeats and the capacity
//! search run one of these per sub-run.

use std::sync::Arc;
use std::time::Instant;

use anyhow::{Context, Result};

use super::clock::check_start_ahead;
use super::control::Control;
use super::phases::{self, Inputs, RunOutcome};
use super::plan::ReplayPlan;
use super::plan::model::Input;
use super::plan::secrets::{basic_auth, redact_url, split_credentials};
use super::prompt::PromptBuilder;
use super::{client, scraper, server_control};
use crate::exit::BadInput;
use crate::io::http::{self, proxy, tls};

/// One complete run: reads what `plan` names, replays it and writes every export into the plan's
/// artifact folder.
pub fn run_one(
    rt: &tokio::runtime::Runtime,
    plan: &ReplayPlan,
    control: &Control,
    started: Instant,
) -> Result<RunOutcome> {
    let dir = &plan.exports.artifact_dir;
    let names = &plan.exports.names;
    let slice_files = plan.exports.slice.map(|_| names.timeslices());
    let raw_file = plan.exports.raw.then(|| names.raw());
    let outputs: Vec<std::path::PathBuf> = std::iter::once(names.records())
        .chain(raw_file)
        .chain(aiperf_core::results::export::SummaryFormat::ALL.map(|f| names.summary(f)))
        .chain(slice_files.into_iter().flatten())
        .chain(names.server_metrics())
        .map(|f| dir.join(f))
        .collect();
    let outputs: Vec<&std::path::Path> = outputs.iter().map(std::path::PathBuf::as_path).collect();
    if let Some(file) = plan.source.input.file() {
        crate::io::output::refuse_same_files(&outputs, &[file]).context(BadInput)?;
    }
    if let Some(at) = plan.coordination.start_at_unix_ns {
        check_start_ahead(at, started).context(BadInput)?;
    }
    let inputs = load(plan).context(BadInput)?;
    let transport = {
        let _guard = rt.enter();
        http_transport(plan)?
    };
    // Readiness, the baseline scrape and the cache reset come before anything is written.
    let scraper = prepare_server(rt, plan, &transport.client)?;
    phases::replay(rt, plan, inputs, transport, control, started, scraper)
}

/// Whom HTTPS trusts (the replay and the metrics scraper alike): the bundled roots, the system's
/// store when some URL is `https://`, `--ssl-ca-cert`, or nobody checked (`--insecure-skip-tls-verify`).
fn trust(plan: &ReplayPlan) -> tls::Trust {
    let t = &plan.target;
    tls::Trust {
        system_roots: t
            .urls
            .iter()
            .chain(&plan.server.metrics_urls)
            .chain(&plan.server.gpu_urls)
            .any(|u| u.starts_with("https://")),
        extra: t.tls.ca_certs.clone(),
        insecure: t.tls.insecure,
    }
}

/// The HTTP transport of a plan: one client (TLS trust, the environment's proxies) and an
/// endpoint per `--url`.
fn http_transport(plan: &ReplayPlan) -> Result<client::HttpTransport> {
    let t = &plan.target;
    if t.tls.insecure {
        say!(
            "warning: --insecure-skip-tls-verify: the certificates of https:// servers are NOT verified; \
             anyone on the network path can read and change this run's traffic"
        );
    }
    let trust = trust(plan);
    let proxies = proxy::Proxies::from_env();
    let connector = http::connector(&trust, proxies.clone()).context(BadInput)?;
    let sticky = t.sticky.then(|| client::Sticky::new(connector.clone()));
    let client = http::client_on(connector, t.reuse_connections);
    let shown = plan.shown_urls();
    let mut endpoints = Vec::with_capacity(t.urls.len());
    for (i, (url, headers)) in plan.request_targets().into_iter().enumerate() {
        let mut ep = client::Endpoint::new(&url, &t.path, t.api_key.as_deref(), &headers, t.timeout)
            .context(BadInput)?
            .max_response_bytes(t.max_response_bytes)
            .session_header(&t.session_header)
            .context(BadInput)?
            .per_chunk_usage(t.body.continuous_usage);
        let shown = shown.get(i).map_or("", String::as_str);
        match proxies.route(&ep.uri) {
            proxy::Route::Direct => {}
            proxy::Route::Tunnel(p) => say!("{shown}: through the proxy {p} (CONNECT tunnel, from HTTPS_PROXY)"),
            proxy::Route::Forward(p) => say!("{shown}: through the proxy {p} (forwarded, from HTTP_PROXY)"),
        }
        if let Some(auth) = proxies.forward_auth(&ep.uri) {
            ep.headers.insert(hyper::header::PROXY_AUTHORIZATION, auth);
        }
        endpoints.push(ep);
    }
    Ok(client::HttpTransport { client, endpoints, raw: plan.exports.raw, sticky })
}

/// Waits for the server (`--wait-for-server`), starts scraping its metrics with a baseline scrape,
/// and empties its prefix cache (`--reset-prefix-cache`).
fn prepare_server(
    rt: &tokio::runtime::Runtime,
    plan: &ReplayPlan,
    client: &http::HttpClient,
) -> Result<Option<scraper::Scraper>> {
    let (base, headers) = plan.request_target();
    let authorization = plan
        .target
        .api_key
        .as_ref()
        .map(|k| format!("Bearer {k}"))
        .or_else(|| headers.iter().find(|(k, _)| k.eq_ignore_ascii_case("authorization")).map(|(_, v)| v.clone()));
    let server = server_control::Server {
        client,
        base: base.trim_end_matches('/').to_owned(),
        shown: redact_url(plan.target.url.trim_end_matches('/')),
        authorization,
    };
    if let Some(wait) = plan.server.wait {
        say!("Waiting up to {:.1} s for {} to answer", wait.limit.as_secs_f64(), server.shown);
        let probe =
            server_control::InferenceProbe::of(plan.target.body.endpoint, &plan.target.path, &plan.target.body.model);
        let waited = rt.block_on(server.wait_until_ready(wait, &plan.target.body.model, &probe))?;
        say!("The server answered after {:.1} s", waited.as_secs_f64());
    }
    let scraper = if plan.server.metrics_urls.is_empty() && plan.server.gpu_urls.is_empty() {
        None
    } else {
        let proxies = proxy::Proxies::from_env();
        let server = plan.server.metrics_urls.iter().map(|u| (u, false));
        let targets = server
            .chain(plan.server.gpu_urls.iter().map(|u| (u, true)))
            .map(|(u, gpu)| {
                let (url, userinfo) = split_credentials(u);
                let what = if gpu { "GPU telemetry" } else { "server metrics" };
                let uri = url.parse().with_context(|| format!("invalid {what} URL {}", redact_url(u)))?;
                Ok(scraper::Target {
                    proxy_authorization: proxies.forward_auth(&uri),
                    uri,
                    shown: redact_url(u),
                    authorization: userinfo.map(|u| basic_auth(&u)),
                    gpu,
                })
            })
            .collect::<Result<Vec<_>>>()
            .context(BadInput)?;
        let tls = tls::client_config(&trust(plan)).context(BadInput)?;
        Some(scraper::Scraper::start(
            targets,
            plan.server.metrics_interval,
            tls,
            proxies,
            plan.exports.progress.is_dashboard(),
            plan.exports.artifact_dir.join(plan.exports.names.gpu_telemetry()),
        )?)
    };
    let detected = scraper.as_ref().and_then(|s| s.scrape(true));
    if let Some(reset) = &plan.server.reset {
        let calls = rt.block_on(server.reset_prefix_cache(plan.server.kind.or(detected), reset))?;
        let kind = match (&reset.path, plan.server.kind.or(detected)) {
            (None, Some(k)) => k.name(),
            _ => "--reset-kv-cache-path",
        };
        say!("Prefix cache emptied ({kind}): POST {}", calls.join(", POST "));
    }
    Ok(scraper)
}

/// Reads the trace while the tokenizer loads, applies synthesis and builds the schedule.
fn load(plan: &ReplayPlan) -> Result<Inputs> {
    let src = &plan.source;
    let (trace, tok) = std::thread::scope(|s| {
        let tok = s.spawn(|| -> Result<_> {
            let t0 = Instant::now();
            let (tokenizer, source) = crate::io::tokenizer::load_tokenizer(
                src.tokenizer.as_deref(),
                &plan.target.body.model,
                &src.tokenizer_revision,
            )?;
            let prompts = PromptBuilder::new(tokenizer, src.block_size, src.seed)?;
            Ok((prompts, source, t0.elapsed()))
        });
        let t0 = Instant::now();
        let trace = match &src.input {
            Input::File(f) if src.dag => crate::io::trace_format::read_dag_jsonl(f, src.max_line_bytes).map(|mut t| {
                super::plan::delay_cap::apply(&mut t, src.delay_cap_s, None);
                (t, t0.elapsed())
            }),
            Input::File(f) => {
                let opts = aiperf_core::formats::ConvertOptions {
                    weka: src.weka,
                    baseten: Some(src.baseten.replay),
                    ..Default::default()
                };
                crate::io::trace_format::read_trace_with(f, &src.format, false, src.max_line_bytes, &opts).and_then(
                    |o| {
                        let trace = match &src.weka {
                            Some(w) => super::plan::weka::apply(o.trace, o.format, w)?,
                            None => o.trace,
                        };
                        let mut trace = super::plan::baseten::apply(trace, o.format, &src.baseten)?;
                        super::plan::delay_cap::apply(&mut trace, src.delay_cap_s, Some(o.format));
                        if let Some((mean, stddev)) = src.osl {
                            aiperf_core::synthesis::synthetic::fill_output_lengths(&mut trace, src.seed, mean, stddev);
                        }
                        Ok((trace, t0.elapsed()))
                    },
                )
            }
            Input::Synthetic(w) => {
                w.generate(src.seed).context("cannot generate the synthetic workload").map(|t| (t, t0.elapsed()))
            }
            Input::Records(t) => {
                let mut t = (**t).clone();
                super::plan::delay_cap::apply(&mut t, src.delay_cap_s, None);
                Ok((t, t0.elapsed()))
            }
            Input::Dataset(d) => {
                let mut t = d.trace.clone();
                super::plan::delay_cap::apply(&mut t, src.delay_cap_s, None);
                Ok((t, t0.elapsed()))
            }
        };
        (trace, tok.join())
    });
    let (trace, read_time) = trace?;
    let mut trace = plan.filter_offsets(trace);
    if let Some(params) = &src.synthesis {
        let before = trace.len();
        trace = aiperf_core::synthesis::transform(&trace, params).context("synthesis failed")?;
        say!("Synthesis applied in memory: {before} rows → {} rows", trace.len());
    }
    let (prompts, source, tok_time) = tok.map_err(|_| anyhow::anyhow!("the tokenizer loader panicked"))??;
    if source.approximate {
        say!(
            "warning: no tokenizer for model '{}' (use --tokenizer): using the {}; token counts are approximate for this model",
            plan.target.body.model,
            source.description
        );
    }
    let schedule = plan.schedule(&trace)?;
    say!(
        "Read {} rows in {:.0} ms; tokenizer and prompt vocabulary ready in {:.0} ms (in parallel)",
        trace.len(),
        read_time.as_secs_f64() * 1e3,
        tok_time.as_secs_f64() * 1e3
    );
    Ok(Inputs {
        trace: Arc::new(trace),
        schedule: Arc::new(schedule),
        prompts: Arc::new(prompts),
        tokenizer: source.description,
    })
}
