//! Property tests of compaction over random catalogs and allowances.

use ctxconsole::core::budget::Tokenizer;
use ctxconsole::core::catalog::{
    Pack, PackMetadata, Pipeline, PipelineMetadata, PipelineStep, RoutingGuide, Schema,
};
use ctxconsole::core::compact::{Allowance, CutOrder, PreparedCatalog, compact_reserialising};
use ctxconsole::core::tokens;
use proptest::prelude::*;
use serde_json::json;

fn words() -> impl Strategy<Value = String> {
    proptest::collection::vec("[a-z]{1,9}", 0..12).prop_map(|w| {
        let mut s = w.join(" ");
        if !s.is_empty() {
            s.push_str(". More detail here. ");
        }
        s
    })
}

fn list() -> impl Strategy<Value = Vec<String>> {
    proptest::collection::vec("[a-z_]{1,10}", 0..4)
}

fn pack() -> impl Strategy<Value = Pack> {
    (
        "[a-z]{1,6}\\.[a-z_]{1,8}",
        words(),
        list(),
        list(),
        list(),
        words(),
        list(),
        proptest::option::of(list()),
    )
        .prop_map(
            |(
                name,
                description,
                accepts,
                produces,
                intent_keywords,
                typical_use,
                limitations,
                fields,
            )| Pack {
                name,
                description,
                metadata: PackMetadata {
                    accepts,
                    produces,
                    intent_keywords,
                    typical_use,
                    limitations,
                    input_schema: fields.map(|f| {
                        let props: serde_json::Map<String, serde_json::Value> = f
                            .into_iter()
                            .map(|k| (k, json!({"type": "string", "description": "a field"})))
                            .collect();
                        Schema::Full(json!({"type": "object", "properties": props}))
                    }),
                    output_schema: None,
                },
            },
        )
}

fn pipeline() -> impl Strategy<Value = Pipeline> {
    (
        "[a-z]{1,8}",
        words(),
        list(),
        list(),
        list(),
        words(),
        proptest::collection::vec(("[a-z]{1,5}", any::<u16>()), 0..4),
    )
        .prop_map(
            |(id, description, intent_keywords, limitations, supersedes, typical_use, steps)| {
                Pipeline {
                    id: format!("builtin.{id}"),
                    name: id.clone(),
                    description,
                    metadata: PipelineMetadata {
                        intent_keywords,
                        typical_use,
                        limitations,
                        supersedes,
                        steps: steps
                            .into_iter()
                            .enumerate()
                            .map(|(i, (pack, n))| PipelineStep {
                                id: format!("s{i}"),
                                name: pack.clone(),
                                pack,
                                body: Some(json!({"n": n})),
                            })
                            .collect(),
                        ..PipelineMetadata::default()
                    },
                }
            },
        )
}

fn guide() -> impl Strategy<Value = RoutingGuide> {
    (
        proptest::collection::vec(pack(), 0..14),
        proptest::collection::vec(pipeline(), 0..6),
    )
        .prop_map(|(packs, pipelines)| RoutingGuide { packs, pipelines })
}

fn tokenizer() -> impl Strategy<Value = Tokenizer> {
    prop_oneof![
        Just(Tokenizer::Estimate),
        Just(Tokenizer::O200k),
        Just(Tokenizer::Cl100k)
    ]
}

const EMPTY: &str = "{\"packs\":[],\"pipelines\":[]}";

proptest! {
    #![proptest_config(ProptestConfig { cases: 400, ..ProptestConfig::default() })]

    #[test]
    fn compaction_never_grows_keeps_supersedes_and_fits_when_it_can(
        g in guide(), cap in 0usize..6000, tokens_allowed in 0usize..3000, tok in tokenizer()
    ) {
        let prepared = PreparedCatalog::new(g.clone());
        let allowance = Allowance { tokens: tokens_allowed, bytes: Some(cap) };
        let order = CutOrder::from_end(&g);
        let c = prepared.compact(allowance, tok, &order);

        // Never grows.
        prop_assert!(c.trim.after_bytes <= c.trim.before_bytes);
        prop_assert!(c.trim.after_tokens <= c.trim.before_tokens);
        prop_assert_eq!(c.trim.after_bytes, c.text.len());
        prop_assert_eq!(c.trim.after_tokens, tokens::count(tok, &c.text).tokens);

        // Valid catalog JSON, and every kept pipeline's supersedes untouched.
        let sent: RoutingGuide = serde_json::from_str(&c.text).unwrap();
        // Kept entries come in catalog order, so the i-th pipeline sent is the i-th kept one
        // (ids may repeat in a random catalog: match by position, not by id).
        let kept_pipelines: Vec<usize> = c.kept.iter().filter(|&&i| i >= g.packs.len()).map(|&i| i - g.packs.len()).collect();
        prop_assert_eq!(kept_pipelines.len(), sent.pipelines.len());
        for (p, &orig) in sent.pipelines.iter().zip(&kept_pipelines) {
            prop_assert_eq!(&p.id, &g.pipelines[orig].id);
            prop_assert_eq!(&p.metadata.supersedes, &g.pipelines[orig].metadata.supersedes);
        }
        // Superseding pipelines are the last to go: of the entries cut for room (not by
        // themselves, as over the allowance even alone and fully trimmed, nor by the crowding
        // rule), no plain one was cut after a superseding one. Plain entries may be left
        // beside a cut superseding pipeline: put back after it went, as they fit where it
        // does not (checked below of every entry cut for room).
        let crowded: Vec<&str> = c.trim.cut.iter().filter(|e| e.crowds_out.is_some()).map(|e| e.name.as_str()).collect();
        let alone_over = |i: usize| {
            let text = prepared.render(6, &[i]);
            text.len() > cap || tokens::count(tok, &text).tokens > tokens_allowed
        };
        let superseding = |name: &str| g.pipelines.iter().any(|p| p.id == name && !p.metadata.supersedes.is_empty());
        let for_room: Vec<&str> = c.trim.cut.iter().filter(|e| !e.alone_over && e.crowds_out.is_none()).map(|e| e.name.as_str()).collect();
        // (Ids may repeat in a random catalog: judged only when the pipelines' are unique.)
        let unique_ids = (0..g.pipelines.len()).all(|j| g.pipelines[..j].iter().all(|p| p.id != g.pipelines[j].id));
        if let Some(first) = for_room.iter().position(|n| superseding(n)).filter(|_| unique_ids) {
            prop_assert!(for_room[first..].iter().all(|n| superseding(n)), "{:?}", for_room);
        }
        // What was cut alone is said so, and nothing else is.
        let said_alone = c.trim.cut.iter().filter(|e| e.alone_over).count();
        if c.trim.cut.is_empty() {
            prop_assert_eq!(said_alone, 0);
        } else {
            prop_assert_eq!(said_alone, (0..prepared.len()).filter(|&i| alone_over(i)).count());
        }
        // An entry cut by the crowding rule took more than half the allowance, alone or with
        // the others named with it (each of k of them over a k-th of half), and keeping it
        // would have cut at least two (cutting it instead kept at least k more, k >= 1).
        for e in c.trim.cut.iter().filter_map(|e| e.crowds_out) {
            if e.with_others == 0 {
                prop_assert!(e.share_percent >= 51 && e.together_percent == 0, "{:?}", e);
            } else {
                prop_assert!(e.together_percent >= 51, "{:?}", e);
                prop_assert!(e.share_percent <= e.together_percent, "{:?}", e);
            }
            prop_assert!(e.would_cut >= 2, "{:?}", e);
        }
        // Every entry cut only for room (not alone, not by the crowding rule) does not fit
        // beside what is kept, measured as sent: one that would was put back (task Q4).
        let stage = usize::from(c.trim.trim_level);
        for i in (0..prepared.len()).filter(|i| !c.kept.contains(i)) {
            let by_rule = crowded.contains(&prepared.entry_name(i)) || alone_over(i);
            if !c.trim.fits || by_rule {
                continue;
            }
            let mut with = c.kept.clone();
            with.push(i);
            with.sort_unstable();
            let text = prepared.render(stage, &with);
            prop_assert!(
                text.len() > cap || tokens::count(tok, &text).tokens > tokens_allowed,
                "entry {} fits beside the kept {:?}", i, c.kept
            );
        }
        // After a cut, the kept entries go with the fewest trim steps with which they fit
        // (Q8: they went with all six), and every step said changed what is sent.
        if c.trim.fits && !c.trim.cut.is_empty() && stage > 0 {
            let text = prepared.render(stage - 1, &c.kept);
            prop_assert!(
                text.len() > cap || tokens::count(tok, &text).tokens > tokens_allowed,
                "the kept {:?} fit with {} steps, sent with {}", c.kept, stage - 1, stage
            );
        }
        for d in &c.trim.dropped {
            let n = usize::from(d.step.number());
            prop_assert!(n <= stage);
            prop_assert!(prepared.render(n - 1, &c.kept) != prepared.render(n, &c.kept), "{:?} said", d);
        }
        // Fits whenever fitting is possible (an empty catalog fits).
        let empty_fits = EMPTY.len() <= cap && tokens::count(tok, EMPTY).tokens <= tokens_allowed;
        prop_assert_eq!(c.trim.fits, empty_fits);
        if empty_fits {
            prop_assert!(c.text.len() <= cap);
            prop_assert!(c.trim.after_tokens <= tokens_allowed);
        }
        prop_assert_eq!(c.trim.kept + c.trim.cut.len(), c.trim.total);
    }

    #[test]
    fn same_input_same_bytes_and_same_as_reserialising(g in guide(), cap in 0usize..5000, tok in tokenizer()) {
        let allowance = Allowance { tokens: cap / 2, bytes: Some(cap) };
        let order = CutOrder::from_end(&g);
        let a = PreparedCatalog::new(g.clone()).compact(allowance, tok, &order);
        let b = PreparedCatalog::new(g.clone()).compact(allowance, tok, &order);
        let anchor = compact_reserialising(&g, allowance, tok, &order);
        prop_assert_eq!(&a, &b);
        prop_assert_eq!(&a.text, &anchor.text);
        prop_assert_eq!(&a.trim, &anchor.trim);
    }

    /// Tester 9 T9-2's shapes at random: a few big entries (none need be over half) among
    /// small ones, under a byte cap and a token allowance, cut from the end or by a ranking
    /// that scores some entries. The crowding rule over a group agrees with the oracle, and
    /// every entry it cut kept more entries than it cost.
    #[test]
    fn crowding_groups_agree_with_the_reserialising_method(
        bigs in proptest::collection::vec((0usize..14, 100usize..2_500, 0u8..4), 0..5),
        smalls in 0usize..30,
        cap in 200usize..8_000,
        token_share in prop_oneof![Just(None), (2usize..8).prop_map(Some)],
        tok in tokenizer(),
        ranked in any::<bool>(),
    ) {
        let mut packs: Vec<serde_json::Value> = bigs
            .iter()
            .enumerate()
            .map(|(i, &(_, n, _))| json!({"name": format!("big{i}"), "description": "A".repeat(n)}))
            .collect();
        packs.extend((0..smalls).map(|i| json!({"name": format!("small{i}"), "description": "Search notes."})));
        // Bigs at random places among the smalls.
        for (i, &(at, _, _)) in bigs.iter().enumerate().rev() {
            let big = packs.remove(i);
            let at = at.min(packs.len());
            packs.insert(at, big);
        }
        let g: RoutingGuide = serde_json::from_value(json!({ "packs": packs })).unwrap();
        let allowance = Allowance {
            tokens: token_share.map_or(usize::MAX, |d| cap / d),
            bytes: Some(cap),
        };
        let order = if ranked {
            let n = g.entry_count();
            let relevance: Vec<ctxconsole::core::compact::Relevance> = g
                .packs
                .iter()
                .map(|p| {
                    let score = bigs
                        .iter()
                        .enumerate()
                        .find(|(i, _)| p.name == format!("big{i}"))
                        .map_or(1.0, |(_, &(_, _, s))| f64::from(s));
                    ctxconsole::core::compact::Relevance { score, first: false, request: None }
                })
                .collect();
            CutOrder::from_ranking(&(0..n).collect::<Vec<_>>(), n, "ranked").with_relevance(relevance)
        } else {
            CutOrder::from_end(&g)
        };
        let c = PreparedCatalog::new(g.clone()).compact(allowance, tok, &order);
        let anchor = compact_reserialising(&g, allowance, tok, &order);
        prop_assert_eq!(&c.text, &anchor.text);
        prop_assert_eq!(&c.trim, &anchor.trim);
        for e in c.trim.cut.iter().filter_map(|e| e.crowds_out) {
            prop_assert!(e.would_cut >= 2, "{:?}", e);
            prop_assert!(e.with_others == 0 || e.together_percent >= 51, "{:?}", e);
        }
    }

    #[test]
    fn summed_exact_counts_equal_whole_text_counts(g in guide(), stage in 0usize..7, tok in tokenizer()) {
        let prepared = PreparedCatalog::new(g);
        let all: Vec<usize> = (0..prepared.len()).collect();
        let text = prepared.render(stage, &all);
        prop_assert_eq!(prepared.tokens(stage, &all, tok), tokens::count(tok, &text).tokens);
    }
}
