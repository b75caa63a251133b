//! The MCP gateway, a front door: the JSON-RPC between an agent (the MCP
//! client) and an MCP server goes through Parallax, over stdio
//! (`parallax mcp wrap`, [`stdio`]) or Streamable HTTP (`parallax mcp
//! proxy`, [`http`]).
//!
//! - [`jsonrpc`]: what a message is, the errors for what is not one, and
//!   reading newline-delimited messages with a size bound;
//! - [`gate`]: which messages become events for the decision service
//!   (`Door::Mcp`), and what each outcome does to the message;
//! - [`memory`]: which tool calls are memory writes (`memory.before`);
//! - [`relay`]: one message or batch through the gate, in order.
//!
//! It is a relay of its own on serde_json, not the `rmcp` SDK: the gateway
//! must pass on what it does not inspect byte for byte (methods of any
//! revision, batches, `_meta`, fields an SDK's types do not know), and a
//! typed SDK would parse, re-serialise and reject what a newer or older
//! peer sends (docs/MCP.md).

pub mod gate;
pub mod http;
pub mod jsonrpc;
pub mod memory;
pub mod relay;
pub mod stdio;
