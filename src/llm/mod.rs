//! The LLM side of the services: which endpoint a model goes to, the OpenAI-compatible
//! client, the wire format, keeping the key out of what is received, and replay of stored
//! plans.

pub mod client;
pub mod provider;
pub mod redact;
pub mod replay;
pub mod send;
pub mod wire;
