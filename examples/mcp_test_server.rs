//! A small MCP server over stdio, built with rmcp's server side, for the live-import tests:
//! `ctxconsole compact --mcp "target/debug/examples/mcp_test_server"`.

use rmcp::model::{
    ListToolsResult, PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler, ServiceExt};
use serde_json::{Map, Value, json};
use std::sync::Arc;

struct TestServer;

fn schema(value: Value) -> Arc<Map<String, Value>> {
    Arc::new(value.as_object().cloned().unwrap_or_default())
}

impl ServerHandler for TestServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let tools = vec![
            Tool::new(
                "notes_add",
                "Add a note to the notebook. Notes are plain text and carry optional tags.",
                schema(
                    json!({"type": "object", "properties": {"text": {"type": "string"}, "tags": {"type": "array", "items": {"type": "string"}}}, "required": ["text"]}),
                ),
            ),
            Tool::new(
                "notes_search",
                "Search notes by words. Returns the best matches first.",
                schema(
                    json!({"type": "object", "properties": {"query": {"type": "string"}, "limit": {"type": "integer"}}, "required": ["query"]}),
                ),
            ),
            Tool::new(
                "weather_get",
                "Get the current weather for a city. Temperatures are in Celsius.",
                schema(
                    json!({"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}),
                ),
            ),
        ];
        Ok(ListToolsResult {
            tools,
            ..ListToolsResult::default()
        })
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> anyhow::Result<()> {
    let service = TestServer.serve(rmcp::transport::stdio()).await?;
    service.waiting().await?;
    Ok(())
}
