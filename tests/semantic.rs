//! The semantic layer (issue 19 item 5) through the binary: the endpoint embedder against
//! the in-process server (real HTTP, real vectors: hashed bags of words), its failures, the
//! vectors kept in the workspace's cache.sqlite, and the local MiniLM model when its weights
//! were fetched (`scripts/fetch-minilm.sh`; skipped with a message naming what is missing
//! otherwise).

mod common;

use common::llm_server::LlmServer;
use common::{TESTER_CATALOG, ctx, eval_labels_command, json_of, succeeded};
use std::path::{Path, PathBuf};

const KEY_ENV: &str = "CTXCONSOLE_TEST_EMBED_KEY";
const KEY: &str = "sk-embed-test-0123456789";

/// A workspace whose config routes `test/` models to the server.
fn workspace(server: &LlmServer, extra: &str) -> tempfile::TempDir {
    let home = tempfile::tempdir().unwrap();
    std::fs::write(
        home.path().join("config.toml"),
        format!("{}{extra}", server.config(KEY_ENV)),
    )
    .unwrap();
    home
}

/// Entries in the sample catalog.
const SAMPLE_ENTRIES: usize = 72;

#[test]
fn endpoint_vectors_are_fused_explained_and_kept_for_the_next_load() {
    let server = LlmServer::start();
    let home = workspace(&server, "\n[rank]\nsemantic = \"endpoint:test/embed-ok\"\n");
    let preview = |prompt: &str| {
        json_of(ctx(home.path()).env(KEY_ENV, KEY).args([
            "preview",
            prompt,
            "--no-history",
            "--json",
        ]))
    };
    let v = preview("book a flight to Rome, then find a hotel near the station");
    let top = v["ranking"]["top"].as_array().unwrap();
    assert!(!top.is_empty());
    for e in top {
        let s = &e["semantic"];
        assert!(s.is_object(), "no semantic part: {e}");
        let sim = s["similarity"].as_f64().unwrap();
        assert!((0.0..=1.0 + 1e-9).contains(&sim), "{s}");
    }
    let first = server.embedded_inputs();
    let entry_texts: usize = first.iter().map(Vec::len).sum::<usize>() - 2;
    assert_eq!(entry_texts, SAMPLE_ENTRIES);
    // One request per 32 texts, the key in the header, the question as its two requests.
    let recorded = server.requests.lock().unwrap().clone();
    assert!(
        recorded
            .iter()
            .all(|r| r.authorization.as_deref() == Some(&format!("Bearer {KEY}")))
    );
    assert!(first.iter().all(|b| b.len() <= 32));
    let last = first.last().unwrap();
    assert_eq!(last.len(), 2, "{last:?}");
    assert!(last[1].starts_with("then find a hotel"), "{last:?}");

    // A second load embeds nothing of the catalog: only the new question's request.
    let before = first.len();
    let v = preview("summarise the top results");
    assert!(v["ranking"]["top"][0]["semantic"].is_object());
    let after = server.embedded_inputs();
    assert_eq!(after.len(), before + 1, "{:?}", &after[before..]);
    assert_eq!(after[before], vec!["summarise the top results".to_string()]);

    // Off by default: a workspace without the key ranks lexically and embeds nothing.
    let plain = workspace(&server, "");
    let v = json_of(ctx(plain.path()).env(KEY_ENV, KEY).args([
        "preview",
        "summarise the top results",
        "--no-history",
        "--json",
    ]));
    assert!(v["ranking"]["top"][0].get("semantic").is_none());
    assert_eq!(server.embedded_inputs().len(), before + 1);
}

/// `preview "find a hotel"` with the endpoint embedder `test/{model}`, which must fail: its
/// stderr.
fn preview_failing(home: &Path, model: &str) -> String {
    let out = ctx(home)
        .env(KEY_ENV, KEY)
        .args([
            "preview",
            "find a hotel",
            "--no-history",
            "--embedder",
            &format!("endpoint:test/{model}"),
        ])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(!out.status.success(), "{model}: succeeded: {err}");
    err
}

#[test]
fn endpoint_failures_name_the_endpoint_and_keep_nothing() {
    let server = LlmServer::start();
    let home = workspace(&server, "");
    let url = format!("{}/embeddings", server.base_url());
    for (model, says) in [
        ("embed-500", "HTTP 500"),
        ("embed-garbage", "not an embeddings answer"),
        ("embed-short", "vectors for"),
        ("embed-hang", "no answer within 2s"),
        // Tester's F8: why no retry followed, and what broke, said.
        (
            "embed-429-long",
            "retry-after 3600 s, too long to wait for: over retry_max_wait",
        ),
        ("embed-cut", "the reply body broke off"),
    ] {
        let asked = server.embedded_inputs().len();
        let err = preview_failing(home.path(), model);
        assert!(err.contains(&url) && err.contains(says), "{model}: {err}");
        assert!(!err.contains(KEY), "{model}: the key leaked: {err}");
        if model == "embed-hang" {
            // Tester's F5: the timeout bounds the whole call, retries included — one
            // attempt hangs it out, not one per retry (3 × 2 s before).
            assert_eq!(server.embedded_inputs().len(), asked + 1, "{err}");
        }
    }
    // Nothing was kept: the next good run embeds the whole catalog.
    let asked_before = server.embedded_inputs().len();
    let v = json_of(ctx(home.path()).env(KEY_ENV, KEY).args([
        "preview",
        "find a hotel",
        "--no-history",
        "--json",
        "--embedder",
        "endpoint:test/embed-ok",
    ]));
    assert!(v["ranking"]["top"][0]["semantic"].is_object());
    let texts: usize = server.embedded_inputs()[asked_before..]
        .iter()
        .map(Vec::len)
        .sum();
    assert_eq!(texts, SAMPLE_ENTRIES + 1);
}

/// When the request's time bound (`llm.timeout`, 2 s here) is what ended the retries, the
/// error says so, not only how many attempts were made; when the retries were spent, it
/// says only that.
#[test]
fn retries_ended_by_the_time_bound_are_said_as_such() {
    let server = LlmServer::start();
    let url = format!("{}/embeddings", server.base_url());
    // `llm` in place of the server config's `retry_base = "50ms"`.
    let with = |llm: &str| {
        let home = tempfile::tempdir().unwrap();
        let config = server
            .config(KEY_ENV)
            .replace("retry_base = \"50ms\"\n", llm);
        std::fs::write(home.path().join("config.toml"), config).unwrap();
        home
    };
    for (llm, model, says) in [
        // Retries spent (three fast 500s): the attempts alone.
        (
            "retry_base = \"50ms\"\n",
            "embed-500",
            "after 3 attempts: embeddings from ",
        ),
        // A backoff of 1 s then 2 s: the second wait would end past the bound.
        (
            "retry_base = \"1s\"\n",
            "embed-500",
            "after 2 attempts; the 2s bound left no time for another: embeddings from ",
        ),
        // An hour's retry-after, within retry_max_wait, but not within the bound.
        (
            "retry_base = \"50ms\"\nretry_max_wait = \"1h\"\n",
            "embed-429-long",
            "after 1 attempt; the 2s bound left no time for another: embeddings from ",
        ),
    ] {
        let home = with(llm);
        let err = preview_failing(home.path(), model);
        assert!(
            err.contains(&url) && err.contains(says),
            "{llm}{model}: {err}"
        );
        if says.starts_with("after 3") {
            assert!(!err.contains("bound"), "{err}");
        }
    }
}

/// The vectors kept in a workspace's cache: (rows, distinct lengths, rows with a value that
/// is not finite or no length).
fn kept_vectors(home: &Path) -> (usize, Vec<i64>, usize) {
    let path = home.join("cache.sqlite");
    if !path.exists() {
        return (0, Vec::new(), 0);
    }
    let db = rusqlite::Connection::open(path).unwrap();
    let mut stmt = db.prepare("SELECT dims, vector FROM vectors").unwrap();
    let rows: Vec<(i64, Vec<u8>)> = stmt
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    let mut dims: Vec<i64> = rows.iter().map(|r| r.0).collect();
    dims.sort_unstable();
    dims.dedup();
    let useless = rows
        .iter()
        .filter(|(_, b)| {
            let v: Vec<f32> = b
                .chunks_exact(4)
                .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
                .collect();
            v.iter().any(|x| !x.is_finite()) || v.iter().all(|&x| x == 0.0)
        })
        .count();
    (rows.len(), dims, useless)
}

/// Tester's F1, F3, F4: an answer no ranking can use — vectors of one length per batch, a
/// value past f32, zeros, indices that are not whole numbers — is one error naming the
/// endpoint and what is wrong, and nothing of it is kept (before, the batches' vectors were
/// kept before their lengths were compared, so every later run failed from the cache without
/// asking the endpoint; 1e39 was kept as infinity and zeros as zeros, ranking as no
/// similarity while the layer said it was on; a float index was read as "no index").
#[test]
fn vectors_no_ranking_can_use_are_refused_and_never_kept() {
    let server = LlmServer::start();
    let home = workspace(&server, "");
    let url = format!("{}/embeddings", server.base_url());
    for (model, says) in [
        ("embed-batchdims", "vectors of different lengths ("),
        ("embed-huge", "not a finite 32-bit number"),
        ("embed-zero", "has no length"),
        (
            "embed-index-float",
            "item 0 has index 31.0, not a whole number in 0..32",
        ),
    ] {
        for run in 0..2 {
            let asked = server.embedded_inputs().len();
            let err = preview_failing(home.path(), model);
            assert!(
                err.contains(&url) && err.contains(says),
                "{model} run {run}: {err}"
            );
            assert_eq!(
                kept_vectors(home.path()).0,
                0,
                "{model} run {run}: vectors kept"
            );
            // The second run asks the endpoint again: nothing was served from the cache.
            assert!(server.embedded_inputs().len() > asked, "{model} run {run}");
        }
    }
}

/// Tester's F2: the endpoint's vectors change length behind the same model name. Before, a
/// question of the new length met entries of the old one and every similarity read 0 while
/// the layer said it was on. Now the catalog is embedded again and the kept vectors are
/// replaced, so the run after embeds only its question.
#[test]
fn vectors_that_change_length_behind_a_name_have_the_catalog_embedded_again() {
    let server = LlmServer::start();
    let home = workspace(&server, "");
    let preview = || {
        json_of(ctx(home.path()).env(KEY_ENV, KEY).args([
            "preview",
            "find a hotel near the station",
            "--no-history",
            "--json",
            "--embedder",
            "endpoint:test/embed-switch",
        ]))
    };
    let texts_asked = || server.embedded_inputs().iter().map(Vec::len).sum::<usize>();
    let best_similarity = |v: &serde_json::Value| {
        v["ranking"]["top"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e["semantic"]["similarity"].as_f64().unwrap())
            .fold(0.0, f64::max)
    };
    let first = preview();
    assert!(best_similarity(&first) > 0.2, "{first}");
    assert_eq!(kept_vectors(home.path()), (SAMPLE_ENTRIES, vec![64], 0));

    server
        .embed_dims
        .store(48, std::sync::atomic::Ordering::SeqCst);
    let before = texts_asked();
    let second = preview();
    assert!(
        best_similarity(&second) > 0.2,
        "the layer ranked as no similarity: {second}"
    );
    assert_eq!(
        texts_asked(),
        before + 1 + SAMPLE_ENTRIES,
        "question, then the catalog again"
    );
    assert_eq!(kept_vectors(home.path()), (SAMPLE_ENTRIES, vec![48], 0));

    let before = texts_asked();
    preview();
    assert_eq!(
        texts_asked(),
        before + 1,
        "only the question: the new vectors were kept"
    );
}

/// A kept vector that cannot be used (written by an older version, or damaged in the file)
/// is embedded again and replaced, not served.
#[test]
fn a_kept_vector_no_ranking_can_use_is_embedded_again() {
    let server = LlmServer::start();
    let home = workspace(&server, "\n[rank]\nsemantic = \"endpoint:test/embed-ok\"\n");
    let preview = || {
        json_of(ctx(home.path()).env(KEY_ENV, KEY).args([
            "preview",
            "find a hotel",
            "--no-history",
            "--json",
        ]))
    };
    preview();
    let db = rusqlite::Connection::open(home.path().join("cache.sqlite")).unwrap();
    let nan: Vec<u8> = std::iter::repeat_n(f32::NAN.to_le_bytes(), 64)
        .flatten()
        .collect();
    let zero = vec![0u8; 64 * 4];
    let damaged = db
        .execute(
            "UPDATE vectors SET vector = ?1 WHERE text_hash IN (SELECT text_hash FROM vectors ORDER BY text_hash LIMIT 2)",
            [&nan],
        )
        .unwrap()
        + db
            .execute(
                "UPDATE vectors SET vector = ?1 WHERE text_hash IN (SELECT text_hash FROM vectors ORDER BY text_hash DESC LIMIT 1)",
                [&zero],
            )
            .unwrap();
    assert_eq!(kept_vectors(home.path()).2, damaged);
    // Tester 4's N4: a row whose dims column holds text made every read of the kept
    // vectors fail, so no run kept vectors again until the file was cleaned by hand.
    let damaged = damaged
        + db
            .execute(
                "UPDATE vectors SET dims = 'x' WHERE text_hash IN (SELECT text_hash FROM vectors ORDER BY text_hash LIMIT 1 OFFSET 10)",
                [],
            )
            .unwrap();
    drop(db);
    let before = server.embedded_inputs().iter().map(Vec::len).sum::<usize>();
    preview();
    let after = server.embedded_inputs().iter().map(Vec::len).sum::<usize>();
    assert_eq!(
        after,
        before + 1 + damaged,
        "the question and the damaged rows"
    );
    assert_eq!(kept_vectors(home.path()), (SAMPLE_ENTRIES, vec![64], 0));
}

#[test]
fn cache_gc_collects_the_vectors_no_catalog_used_lately() {
    let server = LlmServer::start();
    let home = workspace(&server, "");
    let h = home.path();
    // Two embedders (two ids: their vectors are kept apart); the second fails once and is
    // retried.
    let preview = |prompt: &str, model: &str| {
        json_of(ctx(h).env(KEY_ENV, KEY).args([
            "preview",
            prompt,
            "--no-history",
            "--json",
            "--embedder",
            &format!("endpoint:test/{model}"),
        ]))
    };
    let texts_asked = || server.embedded_inputs().iter().map(Vec::len).sum::<usize>();
    // A briefed paste beside the vectors: gc must leave it alone.
    let paste: String = (0..3_000)
        .map(|i| format!("2026-11-22T10:00:00Z INFO request {i} served ok\n"))
        .collect();
    let briefed = json_of(
        ctx(h)
            .args(["preview", "-", "--no-history", "--json"])
            .write_stdin(paste.clone()),
    );
    let paste_ref = briefed["gate"]["briefing"]["cache_ref"]
        .as_str()
        .unwrap()
        .to_string();
    preview("find a hotel", "embed-ok");
    preview("find a hotel", "embed-500-once");
    // Nothing is old yet.
    let none = json_of(ctx(h).args(["cache", "gc", "--json"]));
    assert_eq!(
        (&none["removed"], &none["vectors_removed"], &none["vectors"]),
        (&0.into(), &0.into(), &(2 * SAMPLE_ENTRIES).into()),
        "{none}"
    );
    // A month passes; then the second embedder's catalog is read again (from the cache:
    // only the question is embedded), the first's is not.
    let db = rusqlite::Connection::open(h.join("cache.sqlite")).unwrap();
    db.execute("UPDATE vectors SET used_at = 0, created_at = 0", [])
        .unwrap();
    drop(db);
    let before = texts_asked();
    preview("convert the price to euros", "embed-500-once");
    assert_eq!(texts_asked(), before + 1, "the catalog came from the cache");
    let gc = json_of(ctx(h).args(["cache", "gc", "--json"]));
    assert_eq!(
        (&gc["removed"], &gc["vectors_removed"], &gc["vectors"]),
        (&0.into(), &SAMPLE_ENTRIES.into(), &SAMPLE_ENTRIES.into()),
        "{gc}"
    );
    let got = ctx(h).args(["cache", "get", &paste_ref]).output().unwrap();
    assert_eq!(got.stdout, paste.as_bytes(), "the paste is untouched");
    // The collected ones are embedded again when asked for; the kept ones are not.
    let before = texts_asked();
    preview("find a hotel", "embed-500-once");
    assert_eq!(texts_asked(), before + 1);
    preview("find a hotel", "embed-ok");
    assert_eq!(texts_asked(), before + 1 + SAMPLE_ENTRIES + 1);
    let text = ctx(h).args(["cache", "gc"]).output().unwrap();
    let said = String::from_utf8_lossy(&text.stdout);
    assert!(
        said.contains("removed 0 entries and 0 sentence vectors")
            && said.contains(&format!("{} vectors remain", 2 * SAMPLE_ENTRIES)),
        "{said}"
    );
}

/// An endpoint embedder for `model` on the server, from a config with `retries = 2` and no
/// key (the provider needs none).
fn endpoint_embedder(server: &LlmServer, model: &str) -> Box<dyn ctxconsole::embed::Embedder> {
    let text = format!(
        "[llm]\nconnect_timeout = \"1s\"\ntimeout = \"2s\"\nretries = 2\nretry_base = \"50ms\"\n\n\
         [providers.test]\nprefix = \"test/\"\nbase_url = \"{}\"\n",
        server.base_url()
    );
    let config = ctxconsole::core::config::Config::parse(&text, "test config").unwrap();
    ctxconsole::embed::open_embedder(
        &ctxconsole::embed::SemanticSpec::Endpoint(format!("test/{model}")),
        &config,
        "test config",
    )
    .unwrap()
}

#[test]
fn a_transient_failure_is_retried_as_chat_calls_are() {
    let server = LlmServer::start();
    // A 500 once, then good: one result, two requests seen.
    let flaky = endpoint_embedder(&server, "embed-500-once");
    let v = flaky.embed(&["find a hotel".to_string()]).unwrap();
    assert_eq!(v, vec![common::llm_server::bag_of_words("find a hotel")]);
    assert_eq!(server.embedded_inputs().len(), 2);

    // Always 500: one error naming the URL, after retries + 1 = 3 attempts.
    let broken = endpoint_embedder(&server, "embed-500");
    let err = format!(
        "{:#}",
        broken.embed(&["find a hotel".to_string()]).unwrap_err()
    );
    let url = format!("{}/embeddings", server.base_url());
    assert!(
        err.contains(&url) && err.contains("HTTP 500") && err.contains("after 3 attempts"),
        "{err}"
    );
    assert_eq!(server.embedded_inputs().len(), 2 + 3);

    // Not transient (a 404: no such model): one attempt, no retry.
    let unknown = endpoint_embedder(&server, "embed-unknown");
    let err = format!(
        "{:#}",
        unknown.embed(&["find a hotel".to_string()]).unwrap_err()
    );
    assert!(
        err.contains("HTTP 404") && !err.contains("attempts"),
        "{err}"
    );
    assert_eq!(server.embedded_inputs().len(), 2 + 3 + 1);
}

#[test]
fn asked_for_but_not_there_is_one_clear_error() {
    let home = tempfile::tempdir().unwrap();
    let configure = |text: &str| std::fs::write(home.path().join("config.toml"), text).unwrap();
    let err = refused(ctx(home.path()).args(["preview", "find a hotel", "--semantic"]));
    assert!(
        err.contains("[rank] semantic") && err.contains("config.toml"),
        "{err}"
    );

    let missing = home.path().join("no-model-here");
    configure(&format!(
        "[rank]\nsemantic = \"local:{}\"\n",
        missing.display()
    ));
    let err = refused(ctx(home.path()).args(["compact", "--prompt", "find a hotel"]));
    assert!(err.contains(&missing.display().to_string()), "{err}");
    if cfg!(feature = "semantic-local") {
        assert!(err.contains("scripts/fetch-minilm.sh"), "{err}");
    } else {
        assert!(err.contains("semantic-local"), "{err}");
    }

    configure("[rank]\nsemantic = \"minilm\"\n");
    let err = refused(ctx(home.path()).args(["preview", "find a hotel"]));
    assert!(
        err.contains("rank.semantic") && err.contains("local:DIR"),
        "{err}"
    );

    // A relative model directory in config.toml is the workspace's, wherever the command
    // starts; a file where the directory should be says so (with the feature built).
    configure("[rank]\nsemantic = \"local:models/minilm\"\n");
    let elsewhere = tempfile::tempdir().unwrap();
    let err = refused(
        ctx(home.path())
            .current_dir(elsewhere.path())
            .args(["preview", "find a hotel"]),
    );
    let resolved = home.path().join("models/minilm");
    assert!(err.contains(&resolved.display().to_string()), "{err}");
    if cfg!(feature = "semantic-local") {
        std::fs::create_dir_all(home.path().join("models")).unwrap();
        std::fs::write(&resolved, "not a model").unwrap();
        let out = ctx(home.path())
            .args(["preview", "find a hotel"])
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("is a file, not a directory"), "{err}");
    }

    // An endpoint whose provider's key is not set: the error says it is the semantic
    // layer's embedder, and where it was asked for, not only which key is missing.
    configure(
        "[rank]\nsemantic = \"endpoint:ek/m\"\n\n[providers.ek]\nprefix = \"ek/\"\nbase_url = \"http://127.0.0.1:9/v1\"\nkey_env = \"CTXCONSOLE_TEST_UNSET_KEY\"\n",
    );
    let err = refused(
        ctx(home.path())
            .env_remove("CTXCONSOLE_TEST_UNSET_KEY")
            .args(["preview", "find a hotel"]),
    );
    assert!(
        err.contains("the semantic layer's embedder endpoint:ek/m")
            && err.contains("rank.semantic")
            && err.contains("CTXCONSOLE_TEST_UNSET_KEY"),
        "{err}"
    );
}

/// Run `cmd`, expect it refused as bad input (exit 2), and return what it said.
fn refused(cmd: &mut assert_cmd::Command) -> String {
    let out = cmd.output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(2), "{err}");
    err
}

/// Where `scripts/fetch-minilm.sh` puts the model.
fn minilm_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("target/minilm/all-MiniLM-L6-v2")
}

/// The model directory, or `None` after saying on stderr what is missing and how to get it.
fn minilm_or_skip(test: &str) -> Option<PathBuf> {
    let dir = minilm_dir();
    if dir.join("model.safetensors").is_file() && dir.join("tokenizer.json").is_file() {
        return Some(dir);
    }
    eprintln!(
        "SKIPPED {test}: no all-MiniLM-L6-v2 in {} — run scripts/fetch-minilm.sh",
        dir.display()
    );
    None
}

/// Without the feature the local-model tests are not compiled: said, never a silent pass.
#[cfg(not(feature = "semantic-local"))]
#[test]
fn local_model_tests_need_the_semantic_local_build() {
    eprintln!(
        "SKIPPED the local-model tests: built without the semantic-local feature — run scripts/fetch-minilm.sh (model into {}) and cargo test --features semantic-local --test semantic",
        minilm_dir().display()
    );
    let _ = minilm_or_skip;
}

#[cfg(feature = "semantic-local")]
mod local {
    use super::*;
    use ctxconsole::core::rank::{RankIndex, SEMANTIC_WEIGHT, cosine};
    use ctxconsole::embed::Embedder;
    use ctxconsole::embed::local::LocalEmbedder;
    use serde_json::Value;

    fn embed(m: &LocalEmbedder, texts: &[&str]) -> Vec<Vec<f32>> {
        m.embed(&texts.iter().map(|t| t.to_string()).collect::<Vec<_>>())
            .unwrap()
    }

    #[test]
    fn minilm_vectors_are_unit_length_and_mean_what_they_say() {
        let Some(dir) = minilm_or_skip("minilm_vectors_are_unit_length_and_mean_what_they_say")
        else {
            return;
        };
        let m = LocalEmbedder::open(&dir).unwrap();
        let v = embed(
            &m,
            &[
                "Book a taxi to the airport",
                "Order a cab to the airport",
                "Book a taxi to the airport",
                "Compute the derivative of a polynomial",
            ],
        );
        assert_eq!(v[0].len(), 384);
        let norm: f32 = v[0].iter().map(|x| x * x).sum::<f32>().sqrt();
        assert!((norm - 1.0).abs() < 1e-4, "{norm}");
        assert!((cosine(&v[0], &v[2]) - 1.0).abs() < 1e-4);
        let near = cosine(&v[0], &v[1]);
        let far = cosine(&v[0], &v[3]);
        assert!(near > 0.6 && far < 0.2 && near > far + 0.4, "{near} {far}");
        // Batched or alone, the same vector (padding counts for nothing).
        let alone = embed(&m, &["Book a taxi to the airport"]);
        assert!((cosine(&alone[0], &v[0]) - 1.0).abs() < 1e-4);
    }

    #[test]
    fn the_layer_lifts_what_the_words_miss_on_the_sample_catalog() {
        let Some(dir) = minilm_or_skip("the_layer_lifts_what_the_words_miss_on_the_sample_catalog")
        else {
            return;
        };
        let guide: ctxconsole::core::catalog::RoutingGuide =
            serde_json::from_str(ctxconsole::sample::SAMPLE_CATALOG).unwrap();
        let layer = ctxconsole::embed::Semantic::for_catalog(
            Box::new(LocalEmbedder::open(&dir).unwrap()),
            &guide,
            None,
        )
        .unwrap();
        let index = RankIndex::new(&guide);
        let place = |r: &ctxconsole::core::rank::Ranking, name: &str| {
            r.order
                .iter()
                .position(|s| index.name(s.index) == name)
                .unwrap()
        };
        let question = "summarise the top results";
        let lexical = index.rank(question, None);
        let sims = layer.similarities(question).unwrap();
        let fused = index.rank_semantic(question, None, &sims, SEMANTIC_WEIGHT);
        let (before, after) = (
            place(&lexical, "research.summarize"),
            place(&fused, "research.summarize"),
        );
        assert!(after < before, "research.summarize {before} → {after}");
        let line = index
            .explain(&fused, fused.order[after].index, None)
            .one_line();
        assert!(line.contains("semantic 0."), "{line}");
    }

    #[test]
    fn a_second_catalog_load_embeds_nothing() {
        let Some(dir) = minilm_or_skip("a_second_catalog_load_embeds_nothing") else {
            return;
        };
        let home = tempfile::tempdir().unwrap();
        let embedder = format!("local:{}", dir.display());
        let run = || {
            let out = ctx(home.path())
                .args([
                    "preview",
                    "summarise the top results",
                    "--no-history",
                    "--json",
                    "--embedder",
                    &embedder,
                ])
                .output()
                .unwrap();
            assert!(out.status.success());
            let v: Value = serde_json::from_slice(&out.stdout).unwrap();
            (String::from_utf8_lossy(&out.stderr).into_owned(), v)
        };
        let (err, v) = run();
        assert!(
            err.contains(&format!(
                "embedded {SAMPLE_ENTRIES} of {SAMPLE_ENTRIES} catalog entries"
            )),
            "{err}"
        );
        assert!(v["ranking"]["top"][0]["semantic"].is_object());
        let (err, again) = run();
        assert!(!err.contains("embedded"), "{err}");
        assert_eq!(v["ranking"]["top"], again["ranking"]["top"]);
    }

    /// A model directory `parent/name` holding copies of MiniLM's three files (copies: a
    /// test changes them, and the originals are the fetched model's).
    fn minilm_copy(minilm: &Path, parent: &Path, name: &str) -> PathBuf {
        let dir = parent.join(name);
        std::fs::create_dir_all(&dir).unwrap();
        for f in ["config.json", "tokenizer.json", "model.safetensors"] {
            std::fs::copy(minilm.join(f), dir.join(f)).unwrap();
        }
        dir
    }

    /// `dir/config.json` with `change` made to it.
    fn change_config(dir: &Path, change: impl FnOnce(&mut Value)) {
        let path = dir.join("config.json");
        let mut config: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
        change(&mut config);
        std::fs::write(&path, serde_json::to_vec(&config).unwrap()).unwrap();
    }

    /// A safetensors file's header and where its data starts.
    fn safetensors_header(bytes: &[u8]) -> (serde_json::Map<String, Value>, usize) {
        let n = u64::from_le_bytes(bytes[..8].try_into().unwrap()) as usize;
        let header: Value = serde_json::from_slice(&bytes[8..8 + n]).unwrap();
        (header.as_object().unwrap().clone(), 8 + n)
    }

    /// Tester 16 F1: a config with no attention heads made candle divide by zero, and the
    /// panic took the process down (exit 101, the console, MCP's workers). Refused now
    /// before the model is built, naming the file and the field, as bad input.
    #[test]
    fn a_config_with_no_attention_heads_is_refused_naming_the_file_and_field() {
        let Some(minilm) =
            minilm_or_skip("a_config_with_no_attention_heads_is_refused_naming_the_file_and_field")
        else {
            return;
        };
        let tmp = tempfile::tempdir().unwrap();
        let dir = minilm_copy(&minilm, tmp.path(), "mh0");
        change_config(&dir, |c| c["num_attention_heads"] = 0.into());
        let err = match LocalEmbedder::open(&dir) {
            Ok(_) => panic!("a model with no attention heads was opened"),
            Err(e) => format!("{e:#}"),
        };
        let config = dir.join("config.json").display().to_string();
        assert!(
            err.contains(&format!("{config}: field 'num_attention_heads' is 0;")),
            "{err}"
        );
        let home = tempfile::tempdir().unwrap();
        let said = refused(ctx(home.path()).args([
            "preview",
            "find flights",
            "--no-history",
            "--embedder",
            &format!("local:{}", dir.display()),
        ]));
        assert!(
            said.contains("field 'num_attention_heads' is 0") && !said.contains("panicked"),
            "{said}"
        );
    }

    /// Tester 16 F3: a model with fewer positions than `MAX_TOKENS` failed on any long text
    /// (index-select past its position table); the text is cut at the model's positions.
    #[test]
    fn a_model_with_128_positions_embeds_a_long_text_cut_to_them() {
        let Some(minilm) =
            minilm_or_skip("a_model_with_128_positions_embeds_a_long_text_cut_to_them")
        else {
            return;
        };
        let tmp = tempfile::tempdir().unwrap();
        let dir = minilm_copy(&minilm, tmp.path(), "mp128");
        // The position table cut to 128 rows, the config saying so: weights and config agree.
        let bytes = std::fs::read(dir.join("model.safetensors")).unwrap();
        let (header, data_at) = safetensors_header(&bytes);
        let mut names: Vec<&String> = header.keys().filter(|k| *k != "__metadata__").collect();
        names.sort_by_key(|k| header[*k]["data_offsets"][0].as_u64().unwrap());
        let (mut new_header, mut data) = (serde_json::Map::new(), Vec::new());
        for name in names {
            let t = &header[name];
            let (start, end) = (
                t["data_offsets"][0].as_u64().unwrap() as usize,
                t["data_offsets"][1].as_u64().unwrap() as usize,
            );
            let mut tensor = &bytes[data_at + start..data_at + end];
            let mut shape = t["shape"].clone();
            if name == "embeddings.position_embeddings.weight" {
                let width = shape[1].as_u64().unwrap() as usize;
                tensor = &tensor[..128 * width * 4];
                shape[0] = 128.into();
            }
            let offsets = serde_json::json!([data.len(), data.len() + tensor.len()]);
            data.extend_from_slice(tensor);
            new_header.insert(
                name.clone(),
                serde_json::json!({"dtype": t["dtype"], "shape": shape, "data_offsets": offsets}),
            );
        }
        let mut head = serde_json::to_vec(&new_header).unwrap();
        head.resize(head.len().div_ceil(8) * 8, b' ');
        let mut file = (head.len() as u64).to_le_bytes().to_vec();
        file.extend_from_slice(&head);
        file.extend_from_slice(&data);
        std::fs::remove_file(dir.join("model.safetensors")).unwrap();
        std::fs::write(dir.join("model.safetensors"), file).unwrap();
        change_config(&dir, |c| c["max_position_embeddings"] = 128.into());

        let m = LocalEmbedder::open(&dir).unwrap();
        let long = format!(
            "please find me {}",
            ["cheap flights from porto to lisbon with extra luggage"; 30].join(" ")
        );
        let v = match m.embed(&[long, "find flights".to_string()]) {
            Ok(v) => v,
            Err(e) => panic!("a long text with a 128-position model: {e:#}"),
        };
        assert_eq!(v.len(), 2);
        let norm: f32 = v[0].iter().map(|x| x * x).sum::<f32>().sqrt();
        assert!((norm - 1.0).abs() < 1e-4, "{norm}");
    }

    /// Tester 16 F8: the weights were read under the 256 MiB bound for workspace files,
    /// which ruled out every BERT-base model (about 440 MB). They have a bound of their own:
    /// a 300 MiB file is read (and judged as weights), one over 2 GiB refused unread.
    #[test]
    fn weights_have_their_own_bound_above_the_workspace_files() {
        let Some(minilm) = minilm_or_skip("weights_have_their_own_bound_above_the_workspace_files")
        else {
            return;
        };
        let tmp = tempfile::tempdir().unwrap();
        let dir = minilm_copy(&minilm, tmp.path(), "mbig");
        let weights = dir.join("model.safetensors");
        let open_err = |len: u64| {
            std::fs::remove_file(&weights).unwrap();
            // Sparse: no disk is used, and a file over the bound is never read.
            std::fs::File::create(&weights)
                .unwrap()
                .set_len(len)
                .unwrap();
            match LocalEmbedder::open(&dir) {
                Ok(_) => panic!("{len} bytes of zeros opened as a model"),
                Err(e) => format!("{e:#}"),
            }
        };
        let named = weights.display().to_string();
        let err = open_err(300 << 20);
        assert!(err.starts_with(&format!("{named}: ")), "{err}");
        assert!(
            !err.contains("MiB"),
            "300 MiB of weights refused by size: {err}"
        );
        let err = open_err((2 << 30) + (1 << 20));
        assert_eq!(
            err,
            format!("{named}: 2049 MiB, more than the 2048 MiB a model's weights file may hold")
        );
    }

    /// Tester 16 F2: the id vectors are cached under was the directory's name and the
    /// weights' size, so a model with one weight changed (a fine-tune, another revision)
    /// in a directory of the same name read the first model's vectors. Now any change to
    /// the weights, the tokenizer or the config is another id, and nothing is shared.
    #[test]
    fn a_changed_model_of_the_same_name_and_size_is_another_embedder() {
        let Some(minilm) =
            minilm_or_skip("a_changed_model_of_the_same_name_and_size_is_another_embedder")
        else {
            return;
        };
        let tmp = tempfile::tempdir().unwrap();
        let name = minilm.file_name().unwrap().to_str().unwrap();
        let changed = minilm_copy(&minilm, &tmp.path().join("b"), name);
        let weights = changed.join("model.safetensors");
        let mut bytes = std::fs::read(&weights).unwrap();
        let len = bytes.len();
        let (header, data_at) = safetensors_header(&bytes);
        let query = &header["encoder.layer.0.attention.self.query.weight"]["data_offsets"];
        let (start, end) = (
            data_at + query[0].as_u64().unwrap() as usize,
            data_at + query[1].as_u64().unwrap() as usize,
        );
        bytes[start..end].fill(0);
        std::fs::write(&weights, &bytes).unwrap();
        assert_eq!(std::fs::metadata(&weights).unwrap().len() as usize, len);

        let original = LocalEmbedder::open(&minilm).unwrap();
        let other = LocalEmbedder::open(&changed).unwrap();
        assert!(
            original.id().starts_with(&format!("local {name} ")),
            "{}",
            original.id()
        );
        assert_ne!(original.id(), other.id());

        // Another tokenizer (the same but for one added byte) is another embedder too.
        let retokenized = minilm_copy(&minilm, &tmp.path().join("c"), name);
        let mut tokenizer = std::fs::read(retokenized.join("tokenizer.json")).unwrap();
        tokenizer.push(b'\n');
        std::fs::write(retokenized.join("tokenizer.json"), tokenizer).unwrap();
        let third = LocalEmbedder::open(&retokenized).unwrap();
        assert_ne!(third.id(), original.id());
        assert_ne!(third.id(), other.id());

        // Through the binary, on one workspace: the changed model embeds the whole catalog
        // rather than reading the first model's vectors from the cache.
        let home = tempfile::tempdir().unwrap();
        let preview = |dir: &Path| {
            let out = ctx(home.path())
                .args([
                    "preview",
                    "write a blog post about rust",
                    "--no-history",
                    "--embedder",
                    &format!("local:{}", dir.display()),
                ])
                .output()
                .unwrap();
            assert!(out.status.success(), "{out:?}");
            String::from_utf8_lossy(&out.stderr).into_owned()
        };
        let all = format!("embedded {SAMPLE_ENTRIES} of {SAMPLE_ENTRIES} catalog entries");
        let first = preview(&minilm);
        assert!(first.contains(&all), "{first}");
        let second = preview(&changed);
        assert!(second.contains(&all), "{second}");
    }
}

/// A cache.sqlite that is not a cache: the layer still ranks, every run embeds the catalog
/// again, and each run says once on stderr that the vectors are not cached and why (naming
/// the file); the file is never replaced or written.
#[test]
fn a_damaged_cache_is_said_once_per_run_and_left_as_it_is() {
    let server = LlmServer::start();
    let home = workspace(&server, "\n[rank]\nsemantic = \"endpoint:test/embed-ok\"\n");
    let cache = home.path().join("cache.sqlite");
    let garbage = b"this is not a database, and must stay exactly this\n".repeat(200);
    std::fs::write(&cache, &garbage).unwrap();
    for run in 1..=2 {
        let before = server.requests.lock().unwrap().len();
        let out = succeeded(ctx(home.path()).env(KEY_ENV, KEY).args([
            "preview",
            "book a flight to Rome",
            "--no-history",
            "--json",
        ]));
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        assert!(v["ranking"]["top"][0]["semantic"].is_object(), "{v}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(
            stderr.matches("vectors not cached").count(),
            1,
            "run {run}: {stderr}"
        );
        let line = stderr
            .lines()
            .find(|l| l.contains("vectors not cached"))
            .unwrap();
        assert!(
            line.contains("semantic layer") && line.contains(&cache.display().to_string()),
            "{line}"
        );
        assert!(stderr.contains("(not kept)"), "{stderr}");
        // Every run embeds the whole catalog again: nothing was kept.
        let inputs: usize = server
            .embedded_inputs()
            .iter()
            .skip(before)
            .map(Vec::len)
            .sum();
        assert!(
            inputs >= SAMPLE_ENTRIES,
            "run {run}: {inputs} texts embedded"
        );
        assert_eq!(
            std::fs::read(&cache).unwrap(),
            garbage,
            "the file was written"
        );
    }
}

/// `send`, replays and the console refuse a request holding another configured provider's
/// key; the embeddings endpoint took question and catalog text to its provider unchecked, so
/// a catalog entry or a question holding provider A's key went to provider B. Now nothing
/// is sent when any text to embed holds one: the refusal names the variable, never the key,
/// and the embedder's own provider's key still goes to it.
#[test]
fn text_holding_another_providers_key_is_not_sent_to_the_embeddings_endpoint() {
    const OTHER_ENV: &str = "CTXCONSOLE_TEST_OTHER_EMBED_KEY";
    const OTHER: &str = "sk-other-SECRET-7731-provider-a";
    let server = LlmServer::start();
    let home = workspace(
        &server,
        &format!(
            "\n[providers.other]\nprefix = \"other/\"\nbase_url = \"http://127.0.0.1:9/v1\"\nkey_env = \"{OTHER_ENV}\"\n"
        ),
    );
    let preview = |question: &str| {
        ctx(home.path())
            .env(KEY_ENV, KEY)
            .env(OTHER_ENV, OTHER)
            .args([
                "preview",
                question,
                "--no-history",
                "--embedder",
                "endpoint:test/embed-ok",
            ])
            .output()
            .unwrap()
    };
    let refused_so = |out: &std::process::Output, what: &str| {
        let said = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(!out.status.success(), "{what}: succeeded: {said}");
        assert!(
            said.contains(&format!(
                "holds the key ${OTHER_ENV} holds, another provider's"
            )),
            "{what}: {said}"
        );
        assert!(!said.contains(OTHER), "{what}: the key was shown: {said}");
    };

    // A catalog entry holding it (the last, in the last batch): not one batch is sent.
    let mut catalog: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string("sample-data/catalog.json").unwrap())
            .unwrap();
    let last = catalog["pipelines"]
        .as_array_mut()
        .unwrap()
        .last_mut()
        .unwrap();
    last["description"] = format!("Launch a desktop app with token {OTHER}.").into();
    let catalog_file = home.path().join("catalog.json");
    std::fs::write(&catalog_file, catalog.to_string()).unwrap();
    refused_so(&preview("find a hotel"), "catalog");
    assert_eq!(server.requests.lock().unwrap().len(), 0, "nothing was sent");

    // The sample catalog; the question holding the embedder's own key goes, as written.
    std::fs::remove_file(&catalog_file).unwrap();
    let out = preview(&format!("find a hotel; the log says auth ok for {KEY}"));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let sent = server.requests.lock().unwrap().len();
    assert!(
        server
            .embedded_inputs()
            .concat()
            .iter()
            .any(|t| t.contains(KEY)),
        "the own key went"
    );

    // The question holding the other key: nothing more reaches the server.
    refused_so(
        &preview(&format!("find a hotel; the log says auth ok for {OTHER}")),
        "question",
    );
    assert_eq!(
        server.requests.lock().unwrap().len(),
        sent,
        "nothing was sent"
    );
}

/// `eval rank --labels L --catalog C --embedder endpoint:test/embed-ok` with `extra` flags.
fn eval_semantic(
    server: &LlmServer,
    home: &Path,
    labels: &str,
    extra: &[&str],
) -> std::process::Output {
    let _ = server;
    succeeded(
        eval_labels_command(home, labels, TESTER_CATALOG)
            .env(KEY_ENV, KEY)
            .args(["--embedder", "endpoint:test/embed-ok"])
            .args(extra),
    )
}

/// Tester's F5: with the layer, a half with no question read 0.000 everywhere, was counted
/// short of the bar and pulled the means to 0; in `--json` it was 0.0.
#[test]
fn eval_rank_semantic_gives_an_empty_half_no_figure() {
    let server = LlmServer::start();
    let home = workspace(&server, "");
    // Id 'a' falls in tune: the test half is empty.
    let labels = "{\"id\":\"a\",\"intent\":\"weather in paris\",\"expected\":[\"get_weather\"]}\n";
    let out = eval_semantic(&server, home.path(), labels, &[]);
    let text = String::from_utf8_lossy(&out.stdout);
    let row = text
        .lines()
        .find(|l| l.starts_with("l ") && l.contains(" test "))
        .unwrap_or_else(|| panic!("no test row: {text}"));
    assert!(!row.contains("0.000"), "{row}");
    assert!(row.contains("n/a"), "{row}");
    assert!(!text.contains("short: l"), "{text}");
    assert!(text.contains("test n/a / n/a without"), "{text}");
    let out = eval_semantic(&server, home.path(), labels, &["--json"]);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let test = &v["sets"][0]["test"];
    for part in ["lexical", "semantic", "bm25"] {
        assert_eq!(test[part]["cases"], 0, "{test}");
        assert!(test[part]["recall_at_5"].is_null(), "{part}: {test}");
    }
    assert!(test["lift_recall_at_5"]["mean"].is_null(), "{test}");
    assert_eq!(v["sets"][0]["tune"]["lexical"]["recall_at_5"], 1.0, "{v}");
}

/// Tester's F6: with the layer, the notes of loading (expected tools dropped, a lopsided
/// split) were dropped in text and `--json`, and `--per-question` did not say its ranking
/// was the fused one.
#[test]
fn eval_rank_semantic_keeps_the_notes_and_marks_the_fused_ranking() {
    let server = LlmServer::start();
    let home = workspace(&server, "");
    let labels = "{\"id\":\"a\",\"intent\":\"weather\",\"expected\":[\"get_weather\",\"nope\"]}\n\
                  {\"id\":\"b\",\"intent\":\"search web\",\"expected\":[\"web_search\"]}\n";
    let dropped = "1 expected tools name a tool the catalog";
    let out = eval_semantic(&server, home.path(), labels, &[]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains(dropped) && text.contains("(nope)"), "{text}");
    let out = eval_semantic(&server, home.path(), labels, &["--json"]);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let notes = v["sets"][0]["notes"].as_array().unwrap();
    assert!(
        notes.iter().any(|n| n.as_str().unwrap().contains(dropped)),
        "{v}"
    );
    // Every question in one half: the lopsided split is said too.
    let even: String = [0, 2, 4, 6]
        .iter()
        .map(|n| format!("{{\"id\":\"case-{n}\",\"intent\":\"weather in paris\",\"expected\":[\"get_weather\"]}}\n"))
        .collect();
    let out = eval_semantic(&server, home.path(), &even, &[]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("the test half has no question"), "{text}");
    // --misses: the misses follow the layer's table; no lexical-style report before it.
    let out = eval_semantic(&server, home.path(), labels, &["--misses"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.starts_with("semantic layer: ") && !text.contains("BM25: Okapi"),
        "{text}"
    );
    // --per-question: each line says its ranking is the fused one, and with what.
    let out = eval_semantic(&server, home.path(), labels, &["--per-question"]);
    let text = String::from_utf8_lossy(&out.stdout);
    for line in text.lines() {
        let q: serde_json::Value = serde_json::from_str(line).unwrap();
        // The embedder as the report's header names it (its endpoint and model).
        assert!(
            q["semantic"]["embedder"]
                .as_str()
                .is_some_and(|e| e.ends_with(" embed-ok")),
            "{line}"
        );
        assert!(q["semantic"]["weight"].as_f64().unwrap() > 0.0, "{line}");
    }
}

/// `preview "find a hotel"` with the layer on, started in the background on `home`: the
/// child, and its stderr line by line as it comes.
fn preview_in_background(home: &Path) -> (std::process::Child, std::sync::mpsc::Receiver<String>) {
    use std::io::BufRead;
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_ctxconsole"))
        .env("CTXCONSOLE_HOME", home)
        .env_remove("CTXCONSOLE_LOG")
        .env(KEY_ENV, KEY)
        .args(["preview", "find a hotel", "--no-history", "--json"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = child.stderr.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(stderr).lines() {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    (child, rx)
}

/// How long a test gives a command that must not wait for a lock it holds: well under the
/// minute the store waits for one, so a command that waited is told apart from one that
/// did not however loaded the machine is.
const NOT_WAITING: std::time::Duration = std::time::Duration::from_secs(40);

/// Whether `child` exits (successfully) within [`NOT_WAITING`]; killed if not.
fn exits_without_waiting(child: &mut std::process::Child) -> Option<std::process::ExitStatus> {
    let deadline = std::time::Instant::now() + NOT_WAITING;
    while std::time::Instant::now() < deadline {
        if let Some(status) = child.try_wait().unwrap() {
            return Some(status);
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let _ = child.kill();
    let _ = child.wait();
    None
}

/// Tester 16 F4: with the layer on and the catalog's vectors kept, `preview` waited out
/// another process's write lock on cache.sqlite (a minute) to stamp the vectors' last use,
/// saying nothing. The stamp is best effort: skipped while the lock is held, so the run
/// completes while the test still holds it. Vectors that must be kept (embedded now) do
/// wait for the lock, and the run says so once on stderr before it waits; they are kept
/// once the lock goes.
#[test]
fn a_cache_another_process_is_writing_is_not_waited_for_in_silence() {
    let server = LlmServer::start();
    let home = workspace(&server, "\n[rank]\nsemantic = \"endpoint:test/embed-ok\"\n");
    let cache = home.path().join("cache.sqlite");
    succeeded(ctx(home.path()).env(KEY_ENV, KEY).args([
        "preview",
        "find a hotel",
        "--no-history",
        "--json",
    ]));
    assert_eq!(kept_vectors(home.path()).0, SAMPLE_ENTRIES);
    let holder = rusqlite::Connection::open(&cache).unwrap();
    let stamps = |db: &rusqlite::Connection| -> Vec<i64> {
        let mut st = db
            .prepare("SELECT DISTINCT used_at FROM vectors ORDER BY used_at")
            .unwrap();
        st.query_map([], |r| r.get(0))
            .unwrap()
            .map(Result::unwrap)
            .collect()
    };
    holder
        .execute("UPDATE vectors SET used_at = 5", [])
        .unwrap();

    // Every vector kept: the run only reads, and its stamp is skipped.
    holder.execute_batch("BEGIN EXCLUSIVE").unwrap();
    let (mut child, said) = preview_in_background(home.path());
    let status = exits_without_waiting(&mut child);
    let stderr: Vec<String> = said.try_iter().collect();
    assert!(
        status.is_some(),
        "the run waited for the lock the test holds: {stderr:?}"
    );
    assert!(status.unwrap().success(), "{stderr:?}");
    assert!(!holder.is_autocommit(), "the lock was held throughout");
    assert!(
        !stderr.iter().any(|l| l.contains("another process")),
        "nothing waited, nothing to say: {stderr:?}"
    );
    holder.execute_batch("ROLLBACK").unwrap();
    assert_eq!(
        stamps(&holder),
        [5],
        "the stamp was skipped, not half written"
    );
    // With the lock free, the stamp is written.
    succeeded(
        ctx(home.path())
            .env(KEY_ENV, KEY)
            .args(["preview", "find a hotel", "--no-history"]),
    );
    assert!(
        stamps(&holder).iter().all(|&t| t > 5),
        "{:?}",
        stamps(&holder)
    );

    // Nothing kept: the new vectors wait for the lock, said once before the wait.
    holder.execute("DELETE FROM vectors", []).unwrap();
    holder.execute_batch("BEGIN EXCLUSIVE").unwrap();
    let (mut child, said) = preview_in_background(home.path());
    let mut before = Vec::new();
    let notice = loop {
        match said.recv_timeout(NOT_WAITING) {
            Ok(line) if line.contains("another process is writing") => break line,
            Ok(line) => before.push(line),
            Err(_) => {
                holder.execute_batch("ROLLBACK").unwrap();
                let _ = child.wait();
                panic!("no word of the wait before it: {before:?}");
            }
        }
    };
    assert!(
        notice.contains(&cache.display().to_string())
            && notice.contains("keeping the new sentence vectors waits up to 60 s for it"),
        "{notice}"
    );
    assert!(
        child.try_wait().unwrap().is_none(),
        "said before the wait, not after"
    );
    holder.execute_batch("ROLLBACK").unwrap();
    let status = child.wait().unwrap();
    let after: Vec<String> = said.iter().collect();
    assert!(status.success(), "{after:?}");
    assert!(
        !after.iter().any(|l| l.contains("another process")
            || l.contains("not cached")
            || l.contains("not kept")),
        "said once, and the vectors were kept: {after:?}"
    );
    assert_eq!(kept_vectors(home.path()).0, SAMPLE_ENTRIES);
}
