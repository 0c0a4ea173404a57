//! The LLM side of the services: which endpoint a model goes to, the OpenAI-compatible
//! client, the wire format, and replay of stored plans.

pub mod client;
pub mod provider;
pub mod replay;
pub mod wire;
