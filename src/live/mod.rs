//! Live calls, the service both front ends (and the MCP server) call: replaying stored plans
//! (offline through today's decoder, or live against a model) and sending the request the
//! preview shows to one or several models, with its A/B arms. Built on the preview and the
//! workspace above the client (`crate::llm`), which knows nothing of either.

pub mod baseline;
pub mod in_hand;
pub mod kept_file;
pub mod replay;
pub mod send;
