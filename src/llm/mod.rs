//! The LLM client side of the services: which endpoint a model goes to, the
//! OpenAI-compatible client, the wire format, and keeping the key out of what is received.
//! Below the workspace: what to send is decided above it, in the live-calls service.

pub mod client;
pub mod provider;
pub mod redact;
pub mod wire;
