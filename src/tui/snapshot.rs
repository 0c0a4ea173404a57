//! The one request the console shows (issue 17): planned once per change of model, tier
//! override, instruction or attachments, off the UI thread, and handed to every pane as a
//! read-only snapshot. The Catalog pane (as sent and full), the Preview, the window bar and
//! the attachment chips all draw from it; none of them plans any slice of the request.

use std::sync::Arc;

use crate::core::budget::EffectiveRow;
use crate::core::chart::{WindowBar, window_bar};
use crate::core::request::Attachment;
use crate::preview::{Ask, PlannedRequest, PreviewContext, QuestionVectors, plan_resilient};

/// What one request is planned from: the console's inputs at one moment.
#[derive(Debug, Clone, PartialEq)]
pub struct RequestInputs {
    pub effective: EffectiveRow,
    pub instruction: Arc<String>,
    pub attachments: Arc<Vec<Attachment>>,
    /// Whether this plan may call the semantic layer's embedder for the instruction: only
    /// once the text has settled, one such plan at a time ([`crate::tui::semantic::QuestionEmbedding`]).
    pub question: QuestionVectors,
}

/// The planned request and what the panes read off it.
#[derive(Debug, Clone)]
pub struct RequestSnapshot {
    pub planned: PlannedRequest,
    /// How the request fills the model's window.
    pub window: WindowBar,
    /// The briefed parts could not be kept in the output cache (the request is still the
    /// one that would be sent; its refs just do not resolve yet).
    pub cache_error: Option<String>,
    /// The semantic layer ranked this request: its embedder's id.
    pub semantic: Option<String>,
    /// The layer is on but could not embed this question (it was ranked lexically): why.
    pub semantic_error: Option<String>,
    /// The layer is on but has not embedded this question yet: ranked lexically until the
    /// text settles.
    pub semantic_waiting: bool,
}

/// Plan the request for `inputs` through the same service `ctxconsole preview` uses, its
/// briefed parts kept in the output cache.
pub fn plan_snapshot(ctx: &PreviewContext, inputs: &RequestInputs) -> RequestSnapshot {
    let ask = Ask {
        attachments: &inputs.attachments,
        ..Ask::new(&inputs.effective, &inputs.instruction)
    };
    let r = plan_resilient(ctx, &ask, inputs.question);
    RequestSnapshot {
        window: window_bar(&r.planned),
        planned: r.planned,
        cache_error: r.cache_error,
        semantic: r.semantic,
        semantic_error: r.semantic_error,
        semantic_waiting: r.semantic_waiting,
    }
}
