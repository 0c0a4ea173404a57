//! The embedded sample workspace: budgets, catalog, planner rules, config, seven weeks of
//! history and the planner's labelled messages. A leaf: the store seeds from it and the
//! workspace lays the user's files over it, so neither reaches into the other for it.

pub const SAMPLE_BUDGETS: &str = include_str!("../sample-data/budgets.toml");
pub const SAMPLE_CATALOG: &str = include_str!("../sample-data/catalog.json");
pub const SAMPLE_PLANNER: &str = include_str!("../sample-data/planner.toml");
/// The defaults the workspace's `config.toml` is laid over: drift window, client settings,
/// sample providers.
pub const SAMPLE_CONFIG: &str = include_str!("../sample-data/config.toml");
/// Seven weeks of plan history the store is seeded with on first run.
pub const SAMPLE_PLANS: &str = include_str!("../sample-data/history-plans.jsonl");
pub const SAMPLE_EXECUTIONS: &str = include_str!("../sample-data/history-executions.jsonl");
/// The labelled messages `eval planner` measures the rules on.
pub const SAMPLE_PLANNER_EVAL: &str = include_str!("../sample-data/planner-eval.jsonl");
/// Messages written after the rules were tuned, and never tuned on.
pub const SAMPLE_PLANNER_HOLDOUT: &str = include_str!("../sample-data/planner-holdout.jsonl");
