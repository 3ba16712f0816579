use super::*;

const TEMPLATES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/fixtures/aiperf-0.13.0-templates");

fn template(name: &str) -> String {
    std::fs::read_to_string(format!("{TEMPLATES}/{name}.yaml")).unwrap()
}

fn no_env(_: &str) -> Option<String> {
    None
}

/// `(key, option words)` of each option a file gives.
fn pairs(given: &[Given]) -> Vec<(String, String)> {
    given.iter().map(|g| (g.key.clone(), g.args.join(" "))).collect()
}

fn strings(args: &[&str]) -> Vec<String> {
    args.iter().map(|s| s.to_string()).collect()
}

#[test]
fn a_two_phase_template_becomes_warm_up_and_profiling_options() {
    let given = read("goodput_slo.yaml", &template("goodput_slo"), &no_env).unwrap();
    let expect: Vec<(&str, &str)> = vec![
        ("randomSeed", "--random-seed=42"),
        ("benchmark.model", "--model=meta-llama/Llama-3.1-8B-Instruct"),
        ("benchmark.endpoint.url", "--url=http://localhost:8000"),
        ("benchmark.endpoint.type", "--endpoint-type=chat"),
        ("benchmark.endpoint.path", "--custom-endpoint=/v1/chat/completions"),
        ("benchmark.endpoint.timeout", "--request-timeout-seconds=120"),
        ("benchmark.endpoint.streaming", "--streaming"),
        ("benchmark.dataset.entries", "--num-dataset-entries=5000"),
        ("benchmark.dataset.prompts.isl.mean", "--isl=512"),
        ("benchmark.dataset.prompts.isl.stddev", "--isl-stddev=100"),
        ("benchmark.dataset.prompts.osl.mean", "--osl=256"),
        ("benchmark.dataset.prompts.osl.stddev", "--osl-stddev=50"),
        ("benchmark.phases[0].requests", "--warmup-request-count=100"),
        ("benchmark.phases[0].concurrency", "--warmup-concurrency=16"),
        ("benchmark.phases[1].type", "--arrival-pattern=poisson"),
        ("benchmark.phases[1].rate", "--request-rate=30"),
        ("benchmark.phases[1].duration", "--benchmark-duration=120"),
        ("benchmark.phases[1].concurrency", "--concurrency=100"),
        ("benchmark.phases[1].gracePeriod", "--benchmark-grace-period=60"),
        ("benchmark.artifacts.dir", "--artifact-dir=./artifacts/goodput_slo"),
        ("benchmark.artifacts.sliceDuration", "--slice-duration=30"),
        (
            "benchmark.slos",
            "--goodput=request_latency:5000 time_to_first_token:500 inter_token_latency:50 output_token_throughput_per_user:20.0",
        ),
    ];
    let expect: Vec<(String, String)> = expect.into_iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
    assert_eq!(pairs(&given), expect);
}

#[test]
fn ramps_cancellation_and_durations_take_aiperfs_spellings() {
    let given = read("ramping.yaml", &template("ramping"), &no_env).unwrap();
    let p = pairs(&given);
    for (key, args) in [
        ("benchmark.phases[0].concurrencyRamp", "--warmup-concurrency-ramp-duration=10"),
        ("benchmark.phases[1].concurrencyRamp", "--concurrency-ramp-duration=60"),
        ("benchmark.phases[1].rateRamp", "--request-rate-ramp-duration=60"),
        ("benchmark.phases[1].prefillRamp", "--prefill-concurrency-ramp-duration=30"),
        ("benchmark.phases[1].duration", "--benchmark-duration=300"),
        ("benchmark.artifacts.sliceDuration", "--slice-duration=15"),
    ] {
        assert!(p.contains(&(key.to_string(), args.to_string())), "{key}: {p:?}");
    }
    let given = read("request_cancellation.yaml", &template("request_cancellation"), &no_env).unwrap();
    let p = pairs(&given);
    for (key, args) in [
        ("benchmark.phases[1].cancellation.rate", "--request-cancellation-rate=10"),
        ("benchmark.phases[1].cancellation.delay", "--request-cancellation-delay=0.5"),
        ("benchmark.serverMetrics.urls", "--server-metrics=http://localhost:8000/metrics"),
        ("benchmark.serverMetrics.formats", "--server-metrics-formats=json,csv"),
    ] {
        assert!(p.contains(&(key.to_string(), args.to_string())), "{key}: {p:?}");
    }
    let given = read("time_based_soak.yaml", &template("time_based_soak"), &no_env).unwrap();
    let p = pairs(&given);
    for (key, args) in [
        ("benchmark.warmup.duration", "--warmup-duration=60"),
        ("benchmark.profiling.duration", "--benchmark-duration=3600"),
        ("benchmark.artifacts.sliceDuration", "--slice-duration=300"),
        ("benchmark.gpuTelemetry", "--gpu-telemetry"),
    ] {
        assert!(p.contains(&(key.to_string(), args.to_string())), "{key}: {p:?}");
    }
}

#[test]
fn jinja_and_env_templates_expand_before_the_keys_are_read() {
    let given = read("jinja2_variables.yaml", &template("jinja2_variables"), &no_env).unwrap();
    let p = pairs(&given);
    for (key, args) in [
        ("benchmark.dataset.entries", "--num-dataset-entries=160"),
        ("benchmark.dataset.prompts.isl.stddev", "--isl-stddev=51"),
        ("benchmark.phases[0].requests", "--warmup-request-count=80"),
        ("benchmark.phases[1].rateRamp", "--request-rate-ramp-duration=30"),
        ("benchmark.phases[1].smoothness", "--arrival-smoothness=1.5"),
        ("multiRun.numRuns", "--num-profile-runs=3"),
    ] {
        assert!(p.contains(&(key.to_string(), args.to_string())), "{key}: {p:?}");
    }
    let env = |name: &str| (name == "TARGET_RATE").then(|| "12.5".to_string());
    let text = template("env_var_production").replace("peaks:", "peaks_:");
    let e = read("env_var_production.yaml", &text, &env).unwrap_err().to_string();
    assert!(e.contains("key `benchmark.dataset.prompts.isl.peaks_`"), "{e}");
    // The template's peaks and log-normal OSL, as the distribution options.
    let p = pairs(&read("env_var_production.yaml", &template("env_var_production"), &env).unwrap());
    let isl = r#"--isl-distribution={"peaks":[{"mean":256,"median":214,"weight":70},{"mean":2048,"median":1891,"weight":30}]}"#;
    assert!(p.contains(&("benchmark.dataset.prompts.isl".into(), isl.into())), "{p:?}");
    let osl = r#"--osl-distribution={"mean":256,"median":226}"#;
    assert!(p.contains(&("benchmark.dataset.prompts.osl".into(), osl.into())), "{p:?}");
    let text =
        template("env_var_production").replace("{mean: 2048, median: 1891, weight: 30}", "{mean: 2048, median: 2891}");
    let e = read("env_var_production.yaml", &text, &env).unwrap_err().to_string();
    assert_eq!(
        e,
        "env_var_production.yaml: key `benchmark.dataset.prompts.isl.peaks[1].median` = 2891: accepted is at most the mean (2048)"
    );
    let text = template("env_var_production").replace(
        "        peaks:\n          - {mean: 256, median: 214, weight: 70}\n          - {mean: 2048, median: 1891, weight: 30}\n",
        "        mean: 256\n",
    ).replace("      osl: {mean: 256, median: 226}", "      osl: 256");
    let p = pairs(&read("env_var_production.yaml", &text, &env).unwrap());
    assert!(p.contains(&("benchmark.profiling.rate".into(), "--request-rate=12.5".into())), "{p:?}");
    assert!(p.contains(&("benchmark.profiling.duration".into(), "--benchmark-duration=300".into())), "{p:?}");
}

#[test]
fn the_command_line_overrides_the_files_options() {
    let given = read("multi_url_load_balancing.yaml", &template("multi_url_load_balancing"), &no_env).unwrap();
    let urls = given.iter().filter(|g| g.spelling() == "--url").count();
    assert_eq!(urls, 4);
    let rest = strings(&[
        "-u",
        "http://127.0.0.1:1",
        "--model-names",
        "m",
        "--no-server-metrics",
        "--warmup-concurrency=2",
        "--warmup-request-count",
        "3",
        "--concurrency",
        "9",
        "--benchmark-duration",
        "1",
        "--concurrency-ramp-duration",
        "1",
    ]);
    let loaded = merge("f.yaml".into(), given, rest.clone()).unwrap();
    let spellings: Vec<&str> = loaded.given.iter().map(Given::spelling).collect();
    for gone in
        ["--url", "--model", "--server-metrics", "--server-metrics-formats", "--concurrency", "--warmup-concurrency"]
    {
        assert!(!spellings.contains(&gone), "{gone}: {spellings:?}");
    }
    assert!(spellings.contains(&"--url-strategy") && spellings.contains(&"--benchmark-grace-period"), "{spellings:?}");
    assert!(loaded.args.ends_with(&rest));
}

#[test]
fn a_refused_option_is_refused_at_its_key() {
    let given = read("public_dataset.yaml", &template("public_dataset"), &no_env).unwrap();
    let e = merge("r.yaml".into(), given, Vec::new()).unwrap_err().to_string();
    assert!(e.starts_with("r.yaml: key `benchmark.dataset"), "{e}");
    assert!(e.contains("(AIPerf option --public-dataset) is not supported by `aiperf-cli profile`: "), "{e}");
}

#[test]
fn the_config_option_is_found_in_every_form() {
    for args in [
        &["--config", "a.yaml", "-m", "x"][..],
        &["-f", "a.yaml", "-m", "x"],
        &["-fa.yaml", "-m", "x"],
        &["--config=a.yaml", "-m", "x"],
    ] {
        let (file, rest) = find_config(&strings(args)).unwrap().unwrap();
        assert_eq!((file.as_str(), rest), ("a.yaml", strings(&["-m", "x"])), "{args:?}");
    }
    assert!(find_config(&strings(&["-m", "x", "--", "-f", "a"])).unwrap().is_none());
    let e = find_config(&strings(&["-f", "a.yaml", "--config", "b.yaml"])).unwrap_err().to_string();
    assert_eq!(e, "--config is given twice (a.yaml and b.yaml): accepted is one config file");
    let e = find_config(&strings(&["-m", "x", "-f"])).unwrap_err().to_string();
    assert_eq!(e, "-f needs a value: the AIPerf config file (YAML)");
}

#[test]
fn every_template_reads_into_options_or_a_refusal_by_key() {
    for entry in std::fs::read_dir(TEMPLATES).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().and_then(|e| e.to_str()) != Some("yaml") {
            continue;
        }
        let name = path.file_name().unwrap().to_string_lossy().to_string();
        match read(&name, &std::fs::read_to_string(&path).unwrap(), &no_env) {
            Ok(given) => assert!(!given.is_empty(), "{name}"),
            Err(e) => {
                let key = e.key.clone().unwrap_or_else(|| panic!("no key path: {e}"));
                let e = e.to_string();
                assert!(e.starts_with(&format!("{name}: key `{key}`")) && e.contains("is not supported"), "{e}");
            }
        }
    }
}

/// Each refusal carries the key path its message names: an unknown key (the model's), a value
/// of the wrong shape, a key spelled into a refused value, a template that fails, a variable
/// without a value; a file that is no mapping names no key.
#[test]
fn refusals_carry_their_key_paths() {
    for (text, key) in [
        ("benchmark:\n  model: m\n  endpoint: {urlz: [x]}\n", "benchmark.endpoint.urlz"),
        ("benchmark:\n  model: m\n  artifacts: {raw: 3}\n", "benchmark.artifacts.raw"),
        ("benchmark:\n  model: m\n  metrics: {x: 1}\n", "benchmark.metrics.x"),
        ("schemaVersion: '1.0'\nbenchmark: {model: m}\n", "schemaVersion"),
        ("benchmark:\n  model: '{{ nope(1) }}'\n", "benchmark.model"),
        ("benchmark:\n  model: ${NO_SUCH_VAR}\n", "benchmark.model"),
    ] {
        let e = read("k.yaml", text, &no_env).unwrap_err();
        assert_eq!(e.key.as_deref(), Some(key), "{text}: {e}");
        assert!(e.to_string().starts_with(&format!("k.yaml: key `{key}`")), "{text}: {e}");
    }
    assert!(read("k.yaml", "[1, 2]", &no_env).unwrap_err().key.is_none());
}

#[test]
fn artifacts_raw_is_export_level_raw() {
    let p = pairs(&read("r.yaml", "benchmark:\n  model: m\n  artifacts: {raw: true}\n", &no_env).unwrap());
    assert!(p.contains(&("benchmark.artifacts.raw".into(), "--export-level=raw".into())), "{p:?}");
    let p = pairs(&read("r.yaml", "benchmark:\n  model: m\n  artifacts: {raw: false}\n", &no_env).unwrap());
    assert!(!p.iter().any(|(k, _)| k.contains("raw")), "{p:?}");
}

#[test]
fn a_grid_sweep_of_concurrency_or_rate_is_the_options_list() {
    let text = template("sweep_with_plot");
    let given = read("s.yaml", &text, &no_env).unwrap();
    let p = pairs(&given);
    assert!(
        p.contains(&("sweep.parameters.concurrency".into(), "--concurrency=1,2,4,8,16,32,64,128,256".into())),
        "{p:?}"
    );
    assert_eq!(given.iter().filter(|g| g.spelling() == "--concurrency").count(), 1);
    let text = "benchmark:\n  model: m\n  profiling: {type: poisson, rate: 5, requests: 9}\nsweep:\n  type: grid\n  cooldownSeconds: 2\n  parameters:\n    phases.profiling.rate: [1.5, 3]\n";
    let p = pairs(&read("s.yaml", text, &no_env).unwrap());
    assert!(p.contains(&("sweep.parameters.phases.profiling.rate".into(), "--request-rate=1.5,3".into())), "{p:?}");
    assert!(p.contains(&("sweep.cooldownSeconds".into(), "--parameter-sweep-cooldown-seconds=2".into())), "{p:?}");
    assert!(!p.iter().any(|(_, a)| a == "--request-rate=5"), "{p:?}");
}

#[test]
fn an_input_file_on_the_command_line_replaces_the_files_dataset() {
    let given = read("trace_replay.yaml", &template("trace_replay"), &no_env).unwrap();
    let rest = strings(&["--input-file", "t.jsonl", "--no-server-metrics"]);
    let loaded = merge("t.yaml".into(), given, rest).unwrap();
    assert!(loaded.given.iter().all(|g| !g.key.starts_with("benchmark.dataset")), "{:?}", pairs(&loaded.given));
    assert!(loaded.given.iter().any(|g| g.spelling() == "--fixed-schedule"));
    let given = read("minimal.yaml", &template("minimal"), &no_env).unwrap();
    let loaded = merge("m.yaml".into(), given, strings(&["--input-file=t.jsonl"])).unwrap();
    let spellings: Vec<&str> = loaded.given.iter().map(Given::spelling).collect();
    assert_eq!(spellings, ["--model", "--url", "--request-count", "--concurrency"]);
}

/// `benchmark.networkLatency` as AIPerf reads it: enabled probes (every `pingInterval`), enabled
/// with `meanMs` subtracts the mean, not enabled does nothing; one network option on the command
/// line replaces the whole section.
#[test]
fn network_latency_keys_take_aiperfs_meaning() {
    let file = |section: &str| {
        format!(
            "schemaVersion: \"2.0\"\nbenchmark:\n  model: m\n  endpoint:\n    url: http://127.0.0.1:1\n  networkLatency:\n{section}"
        )
    };
    let opts = |section: &str| pairs(&read("n.yaml", &file(section), &no_env).unwrap());
    let net = |p: Vec<(String, String)>| p.into_iter().filter(|(k, _)| k.contains("network")).collect::<Vec<_>>();
    let owned = |v: &[(&str, &str)]| v.iter().map(|(k, a)| (k.to_string(), a.to_string())).collect::<Vec<_>>();
    assert_eq!(
        net(opts("    enabled: true\n    pingInterval: 0.5\n")),
        owned(&[
            ("benchmark.networkLatency.enabled", "--network-latency-automatic"),
            ("benchmark.networkLatency.pingInterval", "--network-latency-ping-interval=0.5"),
        ])
    );
    assert_eq!(
        net(opts("    enabled: true\n    meanMs: 2.5\n    pingInterval: 0.5\n")),
        owned(&[("benchmark.networkLatency.meanMs", "--network-latency-mean=2.5")])
    );
    assert!(net(opts("    enabled: false\n    meanMs: 2.5\n")).is_empty());
    assert!(net(opts("    meanMs: 2.5\n")).is_empty());
    let e = read("n.yaml", &file("    enabled: maybe\n"), &no_env).unwrap_err();
    assert_eq!(e.key.as_deref(), Some("benchmark.networkLatency.enabled"));
    let given = read("n.yaml", &file("    enabled: true\n    meanMs: 2.5\n"), &no_env).unwrap();
    let loaded = merge("n.yaml".into(), given, strings(&["--network-latency-automatic"])).unwrap();
    assert!(loaded.given.iter().all(|g| !g.spelling().starts_with("--network-latency")), "{:?}", loaded.given);
}
