#![allow(clippy::unwrap_used)]

use super::*;

#[test]
fn defaults_derive_aiperfs_mu_and_sigma() {
    let c = AgenticConfig::default();
    assert_eq!(c.new_tokens_per_turn.mu, Some(7.495541943884256));
    assert_eq!(c.new_tokens_per_turn.sigma, Some(1.1532357118934957));
    assert_eq!(c.cache.layer2.sigma, Some(1.1774100225154747));
    assert_eq!(c.inter_turn_delay.human_delay.mu, Some(10.126631103850338));
}

#[test]
fn reads_the_bundled_default_and_refuses_unknown_keys() {
    let c = AgenticConfig::from_json(BUNDLED_DEFAULT).unwrap();
    assert_eq!(c.max_prompt_tokens, 167_000);
    assert_eq!(c.cache.layer1_5_tokens, 0);
    assert_eq!(c.new_tokens_per_turn.bias, 1.1);
    let e = AgenticConfig::from_json(r#"{"cache": {"layer2": {"mean": 5, "median": 4, "meen": 3}}}"#).unwrap_err();
    assert!(
        matches!(&e, ConfigError::UnknownKey { key, accepted } if key == "cache.layer2.meen" && accepted.contains("median")),
        "{e}"
    );
    let e = AgenticConfig::from_json(r#"{"max_prompt_token": 5}"#).unwrap_err();
    assert!(matches!(&e, ConfigError::UnknownKey { key, .. } if key == "max_prompt_token"), "{e}");
    let e = AgenticConfig::from_json(r#"{"generation_length": {"mean": 5, "median": 40}}"#).unwrap_err();
    assert_eq!(e.to_string(), "`generation_length.mean` = 5 is not accepted: must be at least the median (40)");
    let e = AgenticConfig::from_json(r#"{"block_size": -3}"#).unwrap_err();
    assert!(matches!(&e, ConfigError::Invalid { key, value, .. } if key == "block_size" && value == "-3"), "{e}");
}

#[test]
fn a_manifest_round_trips() {
    let c = AgenticConfig::from_json(BUNDLED_DEFAULT).unwrap().with_limits(Some(100_000), Some(900)).unwrap();
    let manifest =
        serde_json::json!({"seed": 1, "num_sessions": 3, "config_name": "x", "generation_params": c.to_value()});
    let back = AgenticConfig::from_json(&manifest.to_string()).unwrap();
    assert_eq!(back, c);
    assert_eq!(back.generation_length.max, Some(900.0));
}

#[test]
fn turns_mode_drops_resets_and_checks_feasibility() {
    let c = AgenticConfig::from_json(r#"{"turns": {"mean": 6, "median": 5, "min": 2, "max": 20}}"#).unwrap();
    assert_eq!(c.reset, None);
    assert_eq!(c.turns.as_ref().unwrap().max_session_attempts, Some(100));
    let e = AgenticConfig::from_json(r#"{"turns": {"mean": 6, "median": 5, "min": 2, "max": 20}, "reset": {}}"#)
        .unwrap_err();
    assert!(matches!(&e, ConfigError::Invalid { key, .. } if key == "reset"), "{e}");
}
