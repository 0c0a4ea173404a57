//! What the benches share: a deterministic catalog generator.

#![allow(dead_code)]

use ctxconsole::core::catalog::{
    Pack, PackMetadata, Pipeline, PipelineMetadata, PipelineStep, RoutingGuide, Schema,
};
use serde_json::json;

const WORDS: &[&str] = &[
    "fetch", "page", "render", "image", "memory", "store", "search", "draft", "blog", "slides",
    "audio", "video", "repo", "commit", "test", "browser", "click", "form", "schema", "token",
    "budget", "catalog", "summary", "report", "file", "read", "write", "edit", "shell", "command",
    "wallet", "balance", "podcast", "script", "voice", "caption", "gpu",
];

/// A deterministic catalog of `n` entries shaped like the sample's: four packs to a pipeline.
pub fn generated(n: usize) -> RoutingGuide {
    let mut seed = 0x2545_f491_4f6c_dd1du64;
    let mut next = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    let mut words = |k: usize| {
        (0..k)
            .map(|_| WORDS[(next() % WORDS.len() as u64) as usize])
            .collect::<Vec<_>>()
            .join(" ")
    };
    let mut g = RoutingGuide::default();
    for i in 0..n {
        if i % 5 == 4 {
            g.pipelines.push(Pipeline {
                id: format!("builtin.flow-{i}"),
                name: words(3),
                description: format!("{}. {}.", words(14), words(10)),
                metadata: PipelineMetadata {
                    accepts: vec![words(1)],
                    produces: vec![words(1)],
                    intent_keywords: (0..4).map(|_| words(2)).collect(),
                    typical_use: words(9),
                    limitations: vec![words(5)],
                    supersedes: if i % 10 == 4 {
                        vec![format!("fam{}.tool_{}", i % 40, i - 1)]
                    } else {
                        vec![]
                    },
                    steps: (0..3)
                        .map(|s| PipelineStep {
                            id: format!("s{s}"),
                            name: words(1),
                            pack: format!("fam{}.tool_{}", i % 40, i - 1 - s),
                            body: Some(
                                json!({"input": format!("{{{{s{s}.out}}}}"), "mode": words(1)}),
                            ),
                        })
                        .collect(),
                    inputs: Some(Schema::Full(
                        json!({"type": "object", "properties": {"source": {"type": "string"}}}),
                    )),
                    outputs: None,
                },
            });
        } else {
            g.packs.push(Pack {
                name: format!("fam{}.tool_{i}", i % 40),
                description: format!("{}. {}.", words(12), words(9)),
                metadata: PackMetadata {
                    accepts: vec![words(1)],
                    produces: vec![words(1)],
                    intent_keywords: (0..5).map(|_| words(2)).collect(),
                    typical_use: words(8),
                    limitations: vec![words(6)],
                    input_schema: Some(Schema::Full(json!({"type": "object", "properties": {
                        "target": {"type": "string", "description": words(6)},
                        "limit": {"type": "integer", "description": words(4)},
                        "mode": {"type": "string"}}, "required": ["target"]}))),
                    output_schema: None,
                },
            });
        }
    }
    g
}

/// Forty made-up service names, none a word of [`WORDS`] or a verb: what an entry's family is
/// read from (a capitalised first name word, `Stripe_…`, `Notion.…`).
const SERVICES: &[&str] = &[
    "Acme", "Borealis", "Cobalt", "Dynamo", "Ember", "Fjord", "Granite", "Harbor", "Indigo",
    "Juniper", "Kestrel", "Lumen", "Monsoon", "Nimbus", "Onyx", "Pinnacle", "Quartz", "Raven",
    "Sequoia", "Tundra", "Umbra", "Vertex", "Willow", "Xenon", "Yonder", "Zephyr", "Aurora",
    "Basalt", "Cypress", "Delta", "Equinox", "Falcon", "Glacier", "Helios", "Iris", "Jasper",
    "Krypton", "Lagoon", "Meridian", "Nova",
];

/// [`generated`] with each `famK.` prefix named as a service (`Acme.tool_40`), so every
/// entry belongs to one of 40 families of n / 40 entries and the ranking lends family
/// points: the same words, the same queries' matches, one more pass.
pub fn generated_in_families(n: usize) -> RoutingGuide {
    let service = |name: &str| -> String {
        let Some((fam, rest)) = name.split_once('.') else {
            return name.to_string();
        };
        match fam
            .strip_prefix("fam")
            .and_then(|k| k.parse::<usize>().ok())
        {
            Some(k) => format!("{}.{rest}", SERVICES[k % SERVICES.len()]),
            None => name.to_string(),
        }
    };
    let mut g = generated(n);
    for pack in &mut g.packs {
        pack.name = service(&pack.name);
    }
    for pipeline in &mut g.pipelines {
        for step in &mut pipeline.metadata.steps {
            step.pack = service(&step.pack);
        }
        for old in &mut pipeline.metadata.supersedes {
            *old = service(old);
        }
    }
    g
}
