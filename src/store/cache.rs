//! The output cache (DESIGN §2.7): full content that entered the context as a briefing,
//! kept in SQLite in the data directory, keyed by content hash, served whole or by line
//! range, collected by age.
//!
//! Content is stored in chunks cut at content-defined line boundaries, each kept once by
//! its own hash: a paste seen again — alone, or inside a prompt typed around it — adds only
//! the chunks that differ, so the console previewing a big paste at every typing pause
//! writes the paste once, not once per pause.

use crate::core::terminal_text::ShownPath;
use crate::core::text::hex;
use anyhow::Context;
use rusqlite::{Connection, OptionalExtension, params};
use serde::Serialize;
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::llm::redact::Secrets;
use crate::store::now_secs;
use crate::store::sqlite::{self, Schema};

pub const CACHE_FILE: &str = "cache.sqlite";
const SCHEMA: Schema = Schema {
    // "ctxc"
    application_id: 0x6374_7863,
    kind: "output cache",
    // Its writers are short; a long hold is another process's `cache gc` or a bulk store.
    long_writer: "another ctxconsole writing it?",
    migrations: &[
        "CREATE TABLE cache (
             ref TEXT PRIMARY KEY,
             created_at INTEGER NOT NULL,
             bytes INTEGER NOT NULL,
             lines INTEGER NOT NULL,
             content BLOB NOT NULL
         );
         CREATE INDEX cache_created ON cache(created_at);",
        MIGRATION_2,
        MIGRATION_3,
        MIGRATION_4,
        MIGRATION_5,
        MIGRATION_6,
    ],
};

/// Content in chunks, each stored once by its hash; an entry lists its chunks in order.
/// An entry from schema 1 becomes one chunk keyed by its ref (chunk keys made now are
/// longer, so the two never meet).
const MIGRATION_2: &str = "
CREATE TABLE chunks (
    id INTEGER PRIMARY KEY,
    key TEXT NOT NULL UNIQUE,
    content BLOB NOT NULL
);
CREATE TABLE entries (
    ref TEXT PRIMARY KEY,
    created_at INTEGER NOT NULL,
    bytes INTEGER NOT NULL,
    lines INTEGER NOT NULL
);
CREATE INDEX entries_created ON entries(created_at);
CREATE TABLE entry_chunks (
    ref TEXT NOT NULL,
    ord INTEGER NOT NULL,
    chunk INTEGER NOT NULL,
    PRIMARY KEY (ref, ord)
) WITHOUT ROWID;
CREATE INDEX entry_chunks_chunk ON entry_chunks(chunk);
INSERT INTO chunks(key, content) SELECT ref, content FROM cache;
INSERT INTO entries(ref, created_at, bytes, lines) SELECT ref, created_at, bytes, lines FROM cache;
INSERT INTO entry_chunks(ref, ord, chunk) SELECT k.key, 0, k.id FROM chunks k;
DROP TABLE cache;
";

/// Sentence vectors of the semantic layer (the `embed` service), keyed by the embedder's id and
/// the SHA-256 of the text embedded: a catalog loaded again embeds only what changed.
const MIGRATION_3: &str = "
CREATE TABLE vectors (
    embedder TEXT NOT NULL,
    text_hash TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    dims INTEGER NOT NULL,
    vector BLOB NOT NULL,
    PRIMARY KEY (embedder, text_hash)
) WITHOUT ROWID;
";

/// When each vector was last read or written, so `cache gc` collects the vectors no catalog
/// has used lately; a vector kept before this migration counts as used when it was made.
const MIGRATION_4: &str = "
ALTER TABLE vectors ADD COLUMN used_at INTEGER NOT NULL DEFAULT 0;
UPDATE vectors SET used_at = created_at;
CREATE INDEX vectors_used ON vectors(used_at);
";

/// An entry kept with the configured provider keys taken out (tester 12 T12-6) is still
/// found under the ref its briefing names — that of the content as pasted — while its
/// chunks hold the content as kept: `kept_ref` is the ref that content has (NULL: the entry's
/// own ref), against which a read checks it.
const MIGRATION_5: &str = "
ALTER TABLE entries ADD COLUMN kept_ref TEXT;
";

/// Each chunk's size beside it, indexed, so what the cache holds is summed without reading
/// the content (the bound of `[cache] max_bytes`: tester 21 F5).
const MIGRATION_6: &str = "
ALTER TABLE chunks ADD COLUMN bytes INTEGER NOT NULL DEFAULT 0;
UPDATE chunks SET bytes = length(content);
CREATE INDEX chunks_bytes ON chunks(bytes);
";

/// The key a text's vector is kept under (with the embedder's id).
pub fn text_hash(text: &str) -> String {
    hex(&Sha256::digest(text.as_bytes()))
}

/// How long the last-use stamp waits for another process's write lock before it is skipped:
/// room for another ctxconsole's short writes, far short of the minute a write that matters
/// waits ([`sqlite::BUSY_TIMEOUT`]).
const STAMP_WAIT: Duration = Duration::from_millis(250);

/// A last use this far ahead of the clock is still a time (clocks sharing a workspace
/// disagree a little); one further ahead is damage, stale for `cache gc`.
const CLOCK_SLACK_SECS: i64 = 5 * 60;

/// Take the cache's write lock for `doing` ([`sqlite::begin_write`]). When another process
/// holds it now, the wait is said once before it starts — the history import's notice,
/// [`sqlite::writer_note`]: "…; {waits} up to 60 s for it" — rather than sat through in
/// silence (tester 16 F4).
fn begin_write<'c>(
    conn: &'c mut Connection,
    path: &Path,
    doing: &str,
    waits: &str,
) -> anyhow::Result<rusqlite::Transaction<'c>> {
    let wait = sqlite::lock_wait(conn)
        .with_context(|| format!("{}: {doing}: reading the lock wait", path.shown()))?;
    if let Some(note) = sqlite::writer_note(conn, path, &SCHEMA, wait, waits, "")? {
        crate::fsio::notice(note);
    }
    sqlite::begin_write_waiting(conn, path, &SCHEMA, doing, wait)
}

/// A chunk ends after a line whose hash (with the line before it) is a multiple of this:
/// about this many lines to a chunk, wherever the content starts.
const CHUNK_LINES: u64 = 256;
/// No boundary before this many bytes, so runs of short equal lines do not make tiny chunks.
const CHUNK_MIN: usize = 4 * 1024;
/// A chunk never grows past this (a very long line is cut here).
const CHUNK_MAX: usize = 1024 * 1024;

pub struct OutputCache {
    conn: Connection,
    path: PathBuf,
    /// The configured provider keys, taken out of content before it is kept.
    secrets: std::sync::Arc<Secrets>,
    /// The most paste content the cache holds (`[cache] max_bytes`): storing evicts the least
    /// recently stored entries to stay within it.
    max_bytes: u64,
    /// The entries this handle stored: never evicted by it. A request's briefed parts are
    /// kept through one handle (`preview::keep_briefed`), so storing one never evicts another
    /// part of the same request, whose briefing already names it.
    stored_here: std::collections::HashSet<String>,
}

/// An entry evicted to keep the cache within its bound.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Evicted {
    pub cache_ref: String,
    /// The entry's size, whole.
    pub bytes: usize,
    /// When it was last stored (seconds since the epoch).
    pub stored_at: i64,
}

/// What `store` did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stored {
    pub cache_ref: String,
    pub bytes: usize,
    pub lines: usize,
    /// The same content was already cached.
    pub existed: bool,
    /// Bytes of content written now: chunks the cache did not hold yet.
    pub written: usize,
    /// Entries evicted, least recently stored first, to keep the cache within its bound.
    pub evicted: Vec<Evicted>,
}

/// What `gc` did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Collected {
    /// Entries removed: older than the age, then the least recently stored while the cache
    /// held more than its bound.
    pub removed: usize,
    /// Of them, removed for the bound.
    pub removed_over_bound: usize,
    /// The bound (`[cache] max_bytes`) and the paste content held after, each chunk once.
    pub max_bytes: u64,
    pub held_bytes: u64,
    /// Sentence vectors removed: those not used within the age.
    pub vectors_removed: usize,
    /// The file (with its write-ahead log) before and after, in bytes.
    pub file_bytes_before: u64,
    pub file_bytes_after: u64,
}

impl Collected {
    pub fn bytes_freed(&self) -> u64 {
        self.file_bytes_before.saturating_sub(self.file_bytes_after)
    }
}

/// Content cut into chunks at content-defined line ends: the same lines give the same
/// chunks wherever they sit, so an edit changes only the chunks it touches.
pub fn chunks(content: &[u8]) -> Vec<&[u8]> {
    let mut out = Vec::new();
    let (mut start, mut line_start) = (0usize, 0usize);
    // The hash of the line before: a boundary depends on two lines, nothing further back.
    let mut prev: u64 = 0;
    for (i, b) in content.iter().enumerate() {
        let end = i + 1;
        if *b == b'\n' {
            let line = &content[line_start..end];
            let h = fnv1a(prev, line);
            prev = fnv1a(0, line);
            line_start = end;
            if end - start >= CHUNK_MIN && h.is_multiple_of(CHUNK_LINES) {
                out.push(&content[start..end]);
                start = end;
                continue;
            }
        }
        if end - start >= CHUNK_MAX {
            out.push(&content[start..end]);
            start = end;
        }
    }
    if start < content.len() {
        out.push(&content[start..]);
    }
    out
}

/// FNV-1a over `bytes`, seeded with the previous line's hash: stable across runs and builds.
fn fnv1a(seed: u64, bytes: &[u8]) -> u64 {
    let mut h = 0xcbf2_9ce4_8422_2325 ^ seed;
    for b in bytes {
        h ^= *b as u64;
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}

/// The reference for content: 16 hex digits of its SHA-256 (computed in core, where a
/// request names it before anything is stored).
pub fn cache_ref(content: &[u8]) -> String {
    crate::core::gate::content_ref(content)
}

/// Write the entry `cache_ref` holding `content` (its chunks, each once in the cache), made
/// at `created_at`; `kept_ref` is the ref of `content` when it is not `cache_ref` (keys taken
/// out). Returns the bytes of chunks written now.
fn keep_entry(
    tx: &rusqlite::Transaction<'_>,
    cache_ref: &str,
    content: &str,
    created_at: i64,
    kept_ref: Option<&str>,
) -> rusqlite::Result<usize> {
    let mut written = 0;
    let mut find = tx.prepare_cached("SELECT id FROM chunks WHERE key = ?1")?;
    let mut add = tx.prepare_cached(
        "INSERT INTO chunks(key, content, bytes) VALUES (?1, ?2, ?3) RETURNING id",
    )?;
    let mut link =
        tx.prepare_cached("INSERT INTO entry_chunks(ref, ord, chunk) VALUES (?1, ?2, ?3)")?;
    for (ord, chunk) in chunks(content.as_bytes()).into_iter().enumerate() {
        let key = chunk_key(chunk);
        // Looked up by key first: a chunk already held is neither bound nor written.
        let id: i64 = match find.query_row([&key], |r| r.get(0)).optional()? {
            Some(id) => id,
            None => {
                written += chunk.len();
                add.query_row(params![key, chunk, chunk.len() as i64], |r| r.get(0))?
            }
        };
        link.execute(params![cache_ref, ord as i64, id])?;
    }
    tx.execute(
        "INSERT INTO entries(ref, created_at, bytes, lines, kept_ref) VALUES (?1, ?2, ?3, ?4, ?5)",
        params![
            cache_ref,
            created_at,
            content.len() as i64,
            content.lines().count() as i64,
            kept_ref
        ],
    )?;
    Ok(written)
}

/// Drop the entry `cache_ref` and the chunks no other entry uses. Returns the bytes of the
/// chunks dropped.
fn forget_entry(tx: &rusqlite::Transaction<'_>, cache_ref: &str) -> rusqlite::Result<u64> {
    tx.execute(
        "CREATE TEMP TABLE IF NOT EXISTS forgotten_chunks(id INTEGER PRIMARY KEY)",
        [],
    )?;
    tx.execute("DELETE FROM forgotten_chunks", [])?;
    tx.execute(
        "INSERT OR IGNORE INTO forgotten_chunks SELECT chunk FROM entry_chunks WHERE ref = ?1",
        [cache_ref],
    )?;
    tx.execute("DELETE FROM entry_chunks WHERE ref = ?1", [cache_ref])?;
    tx.execute("DELETE FROM entries WHERE ref = ?1", [cache_ref])?;
    let freed: i64 = tx.query_row(
        "SELECT COALESCE(SUM(bytes), 0) FROM chunks WHERE id IN (SELECT id FROM forgotten_chunks)
             AND id NOT IN (SELECT chunk FROM entry_chunks)",
        [],
        |r| r.get(0),
    )?;
    tx.execute(
        "DELETE FROM chunks WHERE id IN (SELECT id FROM forgotten_chunks)
             AND id NOT IN (SELECT chunk FROM entry_chunks)",
        [],
    )?;
    Ok(u64::try_from(freed).unwrap_or(0))
}

/// The paste content the cache holds, each chunk once: what `[cache] max_bytes` bounds.
fn held_bytes(conn: &Connection) -> rusqlite::Result<u64> {
    let n: i64 = conn.query_row("SELECT COALESCE(SUM(bytes), 0) FROM chunks", [], |r| {
        r.get(0)
    })?;
    Ok(u64::try_from(n).unwrap_or(0))
}

/// The bytes of `content`'s chunks the cache does not hold yet: what storing it adds.
fn new_bytes(conn: &Connection, content: &str) -> rusqlite::Result<u64> {
    let mut find = conn.prepare_cached("SELECT 1 FROM chunks WHERE key = ?1")?;
    let mut n = 0u64;
    for chunk in chunks(content.as_bytes()) {
        if !find.exists([chunk_key(chunk)])? {
            n += chunk.len() as u64;
        }
    }
    Ok(n)
}

/// Evict the least recently stored entries, one at a time and never one of `keep`, until
/// the cache holds at most `max_bytes` with `adding` more bytes; inside the caller's write
/// transaction, so another process storing at once sees all of it or none. Returns the
/// entries evicted and the bytes then held.
fn make_room(
    tx: &rusqlite::Transaction<'_>,
    max_bytes: u64,
    adding: u64,
    keep: &std::collections::HashSet<String>,
) -> rusqlite::Result<(Vec<Evicted>, u64)> {
    let mut held = held_bytes(tx)?;
    let mut evicted = Vec::new();
    let mut oldest = tx.prepare_cached(
        "SELECT ref, bytes, created_at FROM entries ORDER BY created_at, rowid LIMIT ?1",
    )?;
    while held.saturating_add(adding) > max_bytes {
        let rows: Vec<(String, i64, i64)> = oldest
            .query_map([keep.len() as i64 + 1], |r| {
                Ok((r.get(0)?, r.get(1)?, r.get(2)?))
            })?
            .collect::<Result<_, _>>()?;
        let Some((cache_ref, bytes, stored_at)) =
            rows.into_iter().find(|(r, _, _)| !keep.contains(r))
        else {
            break;
        };
        held = held.saturating_sub(forget_entry(tx, &cache_ref)?);
        evicted.push(Evicted {
            cache_ref,
            bytes: usize::try_from(bytes).unwrap_or(0),
            stored_at,
        });
    }
    Ok((evicted, held))
}

/// Say what was evicted to keep the cache within its bound: a notice (stderr, or the
/// console's notes) and a log event.
fn report_evicted(path: &Path, evicted: &[Evicted], max_bytes: u64, doing: &str) {
    if evicted.is_empty() {
        return;
    }
    const NAMED: usize = 8;
    let bytes: usize = evicted.iter().map(|e| e.bytes).sum();
    let refs: Vec<&str> = evicted
        .iter()
        .take(NAMED)
        .map(|e| e.cache_ref.as_str())
        .collect();
    let more = evicted.len().saturating_sub(NAMED);
    let more = if more > 0 {
        format!(" and {more} more")
    } else {
        String::new()
    };
    let line = format!(
        "{}: {doing}: evicted {} stored least recently ({bytes} bytes: {}{more}) to stay \
         within [cache] max_bytes = {max_bytes}; a briefing naming {} can no longer be read \
         back",
        path.shown(),
        crate::format::counted(evicted.len(), "entry", "entries"),
        refs.join(", "),
        if evicted.len() == 1 { "it" } else { "one" },
    );
    tracing::info!(
        cache = %path.shown(),
        evicted = evicted.len(),
        bytes,
        max_bytes,
        "{line}"
    );
    crate::fsio::notice(line);
}

/// A chunk's key: 32 hex digits of its SHA-256.
fn chunk_key(chunk: &[u8]) -> String {
    hex(&Sha256::digest(chunk)[..16])
}

/// Bytes of a SQLite file and its write-ahead log.
fn on_disk(path: &Path) -> u64 {
    let wal = crate::fsio::with_suffix(path, "-wal");
    [path.as_os_str(), wal.as_os_str()]
        .iter()
        .map(|p| std::fs::metadata(p).map_or(0, |m| m.len()))
        .sum()
}

/// Why a read of the output cache gave no text. `cache get` and MCP `read_cached` read
/// through [`read_cached`] and say it in the same words ([`NotRead::message`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NotRead {
    /// The workspace has no output cache (this file would be it).
    NoCache(PathBuf),
    /// The cache holds no entry under the ref.
    NoEntry(PathBuf),
    /// The range starts after the last of the entry's `lines`.
    PastEnd { lines: usize },
}

impl NotRead {
    /// What to tell whoever asked for `cache_ref` (with `lines`, given as `range_arg`:
    /// `--lines`, `lines`).
    pub fn message(
        &self,
        cache_ref: &str,
        lines: Option<(usize, usize)>,
        range_arg: &str,
    ) -> String {
        self.said(cache_ref, lines, range_arg, true)
    }

    /// [`message`](Self::message) for an MCP client, which may be remote: the cache named
    /// as the workspace's, not by the server's path to it (tester 33 F10).
    pub fn for_client(
        &self,
        cache_ref: &str,
        lines: Option<(usize, usize)>,
        range_arg: &str,
    ) -> String {
        self.said(cache_ref, lines, range_arg, false)
    }

    fn said(
        &self,
        cache_ref: &str,
        lines: Option<(usize, usize)>,
        range_arg: &str,
        paths: bool,
    ) -> String {
        // What was typed, quoted as every error quotes it: on one line (tester F1).
        let asked = crate::core::terminal_text::quoted(cache_ref);
        let cache = |path: &Path| {
            if paths {
                crate::core::terminal_text::path(path).to_string()
            } else {
                "the workspace's output cache".to_string()
            }
        };
        match self {
            NotRead::NoCache(path) if paths => format!(
                "no cached content {asked}: there is no output cache at {} (briefed pastes are kept there by preview and the console)",
                cache(path)
            ),
            NotRead::NoCache(_) => format!(
                "no cached content {asked}: the workspace has no output cache (briefed pastes are kept there by preview and the console)"
            ),
            NotRead::NoEntry(path) => format!("no cached content {asked} in {}", cache(path)),
            NotRead::PastEnd { lines: count } => {
                let (a, b) = lines.unwrap_or((1, 1));
                format!(
                    // Found, so 16 hex digits: shown as typed.
                    "{} has {}; {range_arg} {a}:{b} starts after the end",
                    crate::core::terminal_text::for_terminal_line(cache_ref),
                    crate::format::counted(*count, "line", "lines")
                )
            }
        }
    }
}

/// The text kept under `cache_ref` in the workspace `dir`'s output cache, whole or lines
/// `a..=b` ([`crate::core::gate::line_range`]: byte for byte), as it was kept (with the
/// configured keys taken out). Never creates a cache. The one read behind `cache get` and
/// MCP `read_cached`.
pub fn read_cached(
    dir: &Path,
    cache_ref: &str,
    lines: Option<(usize, usize)>,
) -> anyhow::Result<Result<String, NotRead>> {
    let Some(cache) = OutputCache::open_existing_in(dir)? else {
        return Ok(Err(NotRead::NoCache(dir.join(CACHE_FILE))));
    };
    let Some(text) = cache.get(cache_ref)? else {
        return Ok(Err(NotRead::NoEntry(cache.path().to_path_buf())));
    };
    Ok(match lines {
        None => Ok(text),
        Some((a, b)) => crate::core::gate::line_range(&text, a, b)
            .map_err(|count| NotRead::PastEnd { lines: count }),
    })
}

impl OutputCache {
    /// Open (creating when missing) the cache in `dir`, the workspace: created 0700 when
    /// missing (see [`crate::fsio::private_dir`]). A file that is not a ctxconsole cache is
    /// refused and left as it is.
    pub fn open_in(dir: &Path) -> anyhow::Result<OutputCache> {
        crate::fsio::private_dir(dir, CACHE_FILE)?;
        Self::open(&dir.join(CACHE_FILE))
    }

    /// The cache in `dir` when there is one, `None` when there is none (or only an empty
    /// file): for what reads or cleans, which must not create a cache — or the workspace —
    /// only to find it empty.
    pub fn open_existing_in(dir: &Path) -> anyhow::Result<Option<OutputCache>> {
        let path = dir.join(CACHE_FILE);
        match std::fs::symlink_metadata(&path) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Ok(meta) if meta.is_file() && meta.len() == 0 => Ok(None),
            // Anything else under the name is opened, or refused naming what it is.
            _ => Self::open(&path).map(Some),
        }
    }

    pub fn open(path: &Path) -> anyhow::Result<OutputCache> {
        let (conn, _) = sqlite::open(path, &SCHEMA)?;
        crate::fsio::report_if_loose_file(path);
        Ok(OutputCache {
            conn,
            path: path.to_path_buf(),
            secrets: Default::default(),
            max_bytes: crate::core::bounds::CACHE_BYTES_DEFAULT,
            stored_here: Default::default(),
        })
    }

    /// Hold at most `max_bytes` of paste content (`[cache] max_bytes`; the default is
    /// [`crate::core::bounds::CACHE_BYTES_DEFAULT`]).
    pub fn with_max_bytes(mut self, max_bytes: u64) -> OutputCache {
        self.max_bytes = max_bytes;
        self
    }

    /// The bound on paste content held.
    pub fn max_bytes(&self) -> u64 {
        self.max_bytes
    }

    /// The paste content held, each chunk once: what the bound counts.
    pub fn held_bytes(&self) -> anyhow::Result<u64> {
        held_bytes(&self.conn).with_context(|| format!("{}: reading its size", self.path.shown()))
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Content stored from now on is kept with every configured provider key taken out
    /// (under the ref of the content as given, which its briefing names).
    pub fn with_secrets(mut self, secrets: std::sync::Arc<Secrets>) -> OutputCache {
        self.secrets = secrets;
        self
    }

    /// Keep `content` (with the configured keys taken out: [`OutputCache::with_secrets`]);
    /// the same content stored twice is one entry (its age restarts), and a chunk the cache
    /// already holds is not written again. The least recently stored entries are evicted, in
    /// the same transaction, to keep the cache within its bound ([`OutputCache::with_max_bytes`]),
    /// never one this handle stored (the other parts of the request being kept); content
    /// larger than the bound, or than what is left beside those, is refused and nothing is
    /// evicted. What was evicted is said ([`report_evicted`]).
    pub fn store(&mut self, given: &str) -> anyhow::Result<Stored> {
        let doing = format!("storing {} bytes", given.len());
        let stored = self
            .store_whole(given)
            .map_err(|e| sqlite::store_failure(e, &self.path, &doing))?;
        report_evicted(&self.path, &stored.evicted, self.max_bytes, &doing);
        self.stored_here.insert(stored.cache_ref.clone());
        Ok(stored)
    }

    fn store_whole(&mut self, given: &str) -> anyhow::Result<Stored> {
        sqlite::ensure_writable(&self.conn, &self.path, SCHEMA.kind, "storing a paste")?;
        let cache_ref = cache_ref(given.as_bytes());
        let redacted = if self.secrets.is_active() {
            std::borrow::Cow::Owned(self.secrets.text(given))
        } else {
            std::borrow::Cow::Borrowed(given)
        };
        let content: &str = &redacted;
        let kept_ref = (content != given).then(|| self::cache_ref(content.as_bytes()));
        let lines = content.lines().count();
        let name = self.path.shown().to_string();
        let max_bytes = self.max_bytes;
        if content.len() as u64 > max_bytes {
            anyhow::bail!(
                "{name}: a paste of {} bytes is larger than the whole output cache may hold, \
                 {max_bytes} bytes ([cache] max_bytes in config.toml); not stored",
                content.len()
            );
        }
        let context = || format!("{name}: storing {} bytes", content.len());
        let tx = begin_write(
            &mut self.conn,
            &self.path,
            &format!("storing {} bytes", content.len()),
            "storing the paste waits",
        )?;
        let now = now_secs();
        let held: Option<(i64, i64)> = tx
            .query_row(
                "SELECT created_at, bytes FROM entries WHERE ref = ?1",
                [&cache_ref],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .optional()
            .with_context(context)?;
        let mut held = held;
        if let Some((_, bytes)) = held
            && bytes != content.len() as i64
        {
            if kept_ref.is_none() || bytes != given.len() as i64 {
                // Two contents behind one 64-bit reference: never answer for the other one.
                anyhow::bail!(
                    "{name}: entry {cache_ref} holds {bytes} bytes of other content with the same reference; not stored"
                );
            }
            // Kept as given before the keys were taken out of what is kept: kept again now.
            forget_entry(&tx, &cache_ref).with_context(context)?;
            held = None;
        }
        let created_at = held.map(|(at, _)| at);
        let existed = created_at.is_some();
        if created_at.is_some_and(|at| at != now) {
            tx.execute(
                "UPDATE entries SET created_at = ?2 WHERE ref = ?1",
                params![cache_ref, now],
            )
            .with_context(context)?;
        }
        let mut keep = self.stored_here.clone();
        keep.insert(cache_ref.clone());
        let adding = if existed {
            0
        } else {
            new_bytes(&tx, content).with_context(context)?
        };
        let (mut evicted, _) = make_room(&tx, max_bytes, adding, &keep).with_context(context)?;
        let mut written = 0;
        if !existed {
            written = keep_entry(&tx, &cache_ref, content, now, kept_ref.as_deref())
                .with_context(context)?;
        }
        // A chunk the new content shared with an entry evicted was written again: room for it.
        let (more, held) = make_room(&tx, max_bytes, 0, &keep).with_context(context)?;
        evicted.extend(more);
        if held > max_bytes {
            // Only this request's own parts are left: nothing is evicted, nothing stored.
            anyhow::bail!(
                "{name}: a paste of {} bytes does not fit in the output cache beside the other \
                 parts of this request it holds: together {held} bytes, over the {max_bytes} \
                 bytes it may hold ([cache] max_bytes in config.toml); not stored",
                content.len()
            );
        }
        tx.commit().with_context(context)?;
        Ok(Stored {
            cache_ref,
            bytes: content.len(),
            lines,
            existed,
            written,
            evicted,
        })
    }

    /// The whole content, or `None` for an unknown ref. Content whose chunks are missing or
    /// no longer hash to its ref is an error naming the file and the entry.
    pub fn get(&self, cache_ref: &str) -> anyhow::Result<Option<String>> {
        read_entry(&self.conn, &self.path, cache_ref)
    }

    /// Remove entries older than `max_age`, then the chunks no entry uses and the sentence
    /// vectors not used within `max_age`, and give the space back to the file system (VACUUM, then the write-ahead log checkpointed and
    /// truncated). Reports the file's size before and after.
    pub fn gc(&mut self, max_age: Duration) -> anyhow::Result<Collected> {
        sqlite::ensure_writable(
            &self.conn,
            &self.path,
            SCHEMA.kind,
            "collecting old entries",
        )?;
        let name = self.path.shown().to_string();
        let file_bytes_before = on_disk(&self.path);
        let now = now_secs();
        let cutoff = now.saturating_sub(i64::try_from(max_age.as_secs()).unwrap_or(i64::MAX));
        let tx = begin_write(
            &mut self.conn,
            &self.path,
            "collecting old entries",
            "collecting old entries waits",
        )?;
        let removed = tx.execute("DELETE FROM entries WHERE created_at < ?1", params![cutoff])?;
        tx.execute(
            "DELETE FROM entry_chunks WHERE ref NOT IN (SELECT ref FROM entries)",
            [],
        )?;
        let chunks_removed = tx.execute(
            "DELETE FROM chunks WHERE id NOT IN (SELECT chunk FROM entry_chunks)",
            [],
        )?;
        // A last use that is no time this build writes — not a whole number (SQLite orders
        // text above every number, so `< cutoff` never held) or past the clock's slack — is
        // damage, and stale (tester 16 F9).
        let vectors_removed = tx.execute(
            "DELETE FROM vectors
             WHERE typeof(used_at) <> 'integer' OR used_at < ?1 OR used_at > ?2",
            params![cutoff, now.saturating_add(CLOCK_SLACK_SECS)],
        )?;
        // Then the least recently stored while more is held than the bound allows (a bound
        // lowered since the last store).
        let (evicted, held_bytes) = make_room(&tx, self.max_bytes, 0, &Default::default())
            .with_context(|| format!("{name}: collecting entries over the bound"))?;
        tx.commit()
            .with_context(|| format!("{name}: collecting old entries"))?;
        report_evicted(&self.path, &evicted, self.max_bytes, "collecting entries");
        let removed_over_bound = evicted.len();
        let removed = removed + removed_over_bound;
        if removed > 0 || chunks_removed > 0 || vectors_removed > 0 {
            sqlite::rewrite_whole(&self.conn)
                .with_context(|| format!("{name}: giving the space back (VACUUM)"))?;
        }
        Ok(Collected {
            removed,
            removed_over_bound,
            max_bytes: self.max_bytes,
            held_bytes,
            vectors_removed,
            file_bytes_before,
            file_bytes_after: on_disk(&self.path),
        })
    }

    /// Take `secrets`' keys out of every entry kept before they were taken out of what is
    /// kept (an entry cached before the key was configured, or by an older version): each is
    /// kept again under its own ref (its briefing still finds it) with its age, in one
    /// transaction; then the file is rewritten (VACUUM) and its write-ahead log emptied, so
    /// the key is in no free page either. With `dry_run`, only found. Returns the refs of
    /// the entries that held a key.
    pub fn scrub(&mut self, secrets: &Secrets, dry_run: bool) -> anyhow::Result<Vec<String>> {
        let name = self.path.shown().to_string();
        let refs: Vec<String> = self
            .conn
            .prepare("SELECT ref FROM entries ORDER BY created_at, ref")?
            .query_map([], |r| r.get(0))?
            .collect::<Result<_, _>>()
            .with_context(|| format!("{name}: listing the entries"))?;
        // Only the refs are held: each entry is read again and kept anew one at a time, so
        // a cache of large pastes is never all in memory at once.
        let mut held: Vec<String> = Vec::new();
        for r in refs {
            if let Some(content) = self.get(&r)?
                && secrets.text(&content) != content
            {
                held.push(r);
            }
        }
        if dry_run || held.is_empty() {
            return Ok(held);
        }
        sqlite::ensure_writable(&self.conn, &self.path, SCHEMA.kind, "scrubbing keys")?;
        // What the scrub deletes is overwritten with zeros as it goes, so the key is in no
        // free page even if the file cannot be rewritten afterwards (another reader).
        self.conn
            .pragma_update(None, "secure_delete", "ON")
            .with_context(|| format!("{name}: scrubbing keys"))?;
        let tx = begin_write(
            &mut self.conn,
            &self.path,
            "scrubbing keys",
            "scrubbing keys waits",
        )?;
        for cache_ref in &held {
            let context = || format!("{name}: scrubbing entry {cache_ref}");
            let created_at: i64 = tx
                .query_row(
                    "SELECT created_at FROM entries WHERE ref = ?1",
                    [cache_ref],
                    |r| r.get(0),
                )
                .with_context(context)?;
            let Some(content) = read_entry(&tx, &self.path, cache_ref)? else {
                continue;
            };
            let kept = secrets.text(&content);
            let kept_ref = self::cache_ref(kept.as_bytes());
            forget_entry(&tx, cache_ref).with_context(context)?;
            keep_entry(&tx, cache_ref, &kept, created_at, Some(&kept_ref)).with_context(context)?;
        }
        tx.commit()
            .with_context(|| format!("{name}: scrubbing keys"))?;
        sqlite::rewrite_whole(&self.conn).with_context(|| {
            format!(
                "{name}: the keys are out of every entry; rewriting the file (VACUUM) and \
                     emptying its write-ahead log"
            )
        })?;
        Ok(held)
    }

    /// The vectors `embedder` made for these texts (by [`text_hash`]), where kept; a row
    /// whose length does not match its stored dimension is treated as missing.
    pub fn vectors(
        &self,
        embedder: &str,
        hashes: &[String],
    ) -> anyhow::Result<std::collections::HashMap<String, Vec<f32>>> {
        let mut out = std::collections::HashMap::new();
        let mut stmt = self.conn.prepare_cached(
            "SELECT dims, vector FROM vectors WHERE embedder = ?1 AND text_hash = ?2",
        )?;
        for h in hashes {
            if out.contains_key(h) {
                continue;
            }
            // A row whose columns hold the wrong types (damaged) is as good as missing: it is
            // embedded again and replaced, not an error that stops every later run keeping
            // vectors.
            let row: Option<(Option<i64>, Option<Vec<u8>>)> = stmt
                .query_row(params![embedder, h], |r| {
                    Ok((r.get::<_, i64>(0).ok(), r.get::<_, Vec<u8>>(1).ok()))
                })
                .optional()
                .with_context(|| format!("{}: reading kept vectors", self.path.shown()))?;
            if let Some((Some(dims), Some(bytes))) = row
                && usize::try_from(dims).is_ok_and(|d| d > 0 && bytes.len() == d * 4)
            {
                let v = bytes
                    .chunks_exact(4)
                    .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
                    .collect();
                out.insert(h.clone(), v);
            }
        }
        Ok(out)
    }

    /// Mark the kept vectors of these texts as used now, so `cache gc` keeps what catalogs
    /// still read; in one transaction, writing only rows not already marked now (a damaged
    /// mark — text, the far future — is written anew). Best effort: returns whether it was
    /// written. While another process holds the write lock it is skipped after
    /// [`STAMP_WAIT`], not waited for: a mark missed once at most lets `cache gc` take a
    /// vector that is then embedded again, where waiting held the run up to a minute
    /// (tester 16 F4).
    pub fn touch_vectors(&mut self, embedder: &str, hashes: &[String]) -> anyhow::Result<bool> {
        if hashes.is_empty() {
            return Ok(true);
        }
        sqlite::ensure_writable(&self.conn, &self.path, SCHEMA.kind, "marking vectors used")?;
        let wait = sqlite::lock_wait(&self.conn)?;
        sqlite::set_lock_wait(&self.conn, STAMP_WAIT)?;
        let marked = self.mark_used(embedder, hashes);
        // The connection's own wait again, for the writes that matter.
        sqlite::set_lock_wait(&self.conn, wait)?;
        match marked {
            Err(e) if sqlite::waited_out_for_the_lock(&e) => Ok(false),
            other => other.map(|()| true),
        }
    }

    fn mark_used(&mut self, embedder: &str, hashes: &[String]) -> anyhow::Result<()> {
        const DOING: &str = "marking vectors used";
        let context = || format!("{}: {DOING}", self.path.shown());
        let now = now_secs();
        let tx =
            sqlite::begin_write_waiting(&mut self.conn, &self.path, &SCHEMA, DOING, STAMP_WAIT)?;
        {
            let mut stmt = tx
                .prepare_cached(
                    "UPDATE vectors SET used_at = ?3
                     WHERE embedder = ?1 AND text_hash = ?2 AND used_at IS NOT ?3",
                )
                .with_context(context)?;
            for h in hashes {
                stmt.execute(params![embedder, h, now])
                    .with_context(context)?;
            }
        }
        tx.commit().with_context(context)
    }

    /// Keep vectors `embedder` made, by [`text_hash`], in one transaction, each marked used
    /// now (a row kept again gets a new mark). Waits for another process's write lock, said
    /// before the wait ([`begin_write`]); a wait that runs out is an error naming the file.
    pub fn keep_vectors(
        &mut self,
        embedder: &str,
        rows: &[(String, Vec<f32>)],
    ) -> anyhow::Result<()> {
        if rows.is_empty() {
            return Ok(());
        }
        sqlite::ensure_writable(&self.conn, &self.path, SCHEMA.kind, "keeping vectors")?;
        let doing = match rows.len() {
            1 => "keeping 1 sentence vector".to_string(),
            n => format!("keeping {n} sentence vectors"),
        };
        let name = self.path.shown().to_string();
        let context = || format!("{name}: {doing}");
        let now = now_secs();
        let tx = begin_write(
            &mut self.conn,
            &self.path,
            &doing,
            "keeping the new sentence vectors waits",
        )?;
        {
            let mut stmt = tx
                .prepare_cached(
                    "INSERT OR REPLACE INTO vectors(embedder, text_hash, created_at, dims, vector, used_at)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?3)",
                )
                .with_context(context)?;
            for (h, v) in rows {
                let bytes: Vec<u8> = v.iter().flat_map(|x| x.to_le_bytes()).collect();
                stmt.execute(params![embedder, h, now, v.len() as i64, bytes])
                    .with_context(context)?;
            }
        }
        tx.commit().with_context(context)?;
        Ok(())
    }

    /// How many vectors `embedder` has kept.
    pub fn vector_count(&self, embedder: &str) -> anyhow::Result<usize> {
        let n: i64 = self.conn.query_row(
            "SELECT COUNT(*) FROM vectors WHERE embedder = ?1",
            params![embedder],
            |r| r.get(0),
        )?;
        Ok(usize::try_from(n).unwrap_or(0))
    }

    /// Sentence vectors kept, of every embedder.
    pub fn vector_total(&self) -> anyhow::Result<usize> {
        let n: i64 = self
            .conn
            .query_row("SELECT COUNT(*) FROM vectors", [], |r| r.get(0))?;
        Ok(usize::try_from(n).unwrap_or(0))
    }

    /// (entries, bytes) held: `bytes` counts each entry whole, as `cache get` returns it.
    pub fn stats(&self) -> anyhow::Result<(usize, usize)> {
        let (n, b): (i64, i64) = self.conn.query_row(
            "SELECT COUNT(*), COALESCE(SUM(bytes), 0) FROM entries",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )?;
        Ok((n as usize, b as usize))
    }
}

/// One entry's content, checked against its reference (see [`OutputCache::get`]); read
/// through `conn`, which may be a transaction of the cache.
fn read_entry(
    conn: &rusqlite::Connection,
    path: &Path,
    cache_ref: &str,
) -> anyhow::Result<Option<String>> {
    let cache_ref = cache_ref.to_ascii_lowercase();
    let name = path.shown();
    let entry: Option<(i64, Option<String>)> = conn
        .query_row(
            "SELECT bytes, kept_ref FROM entries WHERE ref = ?1",
            [&cache_ref],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .optional()
        .with_context(|| format!("{name}: reading {cache_ref}"))?;
    let Some((bytes, kept_ref)) = entry else {
        return Ok(None);
    };
    let mut content = Vec::with_capacity(usize::try_from(bytes).unwrap_or(0));
    let mut st = conn.prepare_cached(
        "SELECT c.content FROM entry_chunks e JOIN chunks c ON c.id = e.chunk
         WHERE e.ref = ?1 ORDER BY e.ord",
    )?;
    let mut rows = st.query([&cache_ref])?;
    while let Some(r) = rows
        .next()
        .with_context(|| format!("{name}: reading {cache_ref}"))?
    {
        content.extend_from_slice(r.get_ref(0)?.as_blob()?);
    }
    let damaged = |what: &str| anyhow::anyhow!("{name}: entry {cache_ref} is damaged ({what})");
    let expected = kept_ref.as_deref().unwrap_or(&cache_ref);
    if content.len() as i64 != bytes || self::cache_ref(&content) != expected {
        return Err(damaged("its content no longer matches its reference"));
    }
    String::from_utf8(content)
        .map(Some)
        .map_err(|_| damaged("not UTF-8"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vectors_are_kept_by_embedder_and_text() {
        let dir = tempfile::tempdir().unwrap();
        let mut c = OutputCache::open_in(dir.path()).unwrap();
        let h = text_hash("find a hotel");
        c.keep_vectors("m1", &[(h.clone(), vec![0.5, -1.0, 2.0])])
            .unwrap();
        drop(c);
        let c = OutputCache::open_in(dir.path()).unwrap();
        let got = c.vectors("m1", &[h.clone(), text_hash("other")]).unwrap();
        assert_eq!(got.len(), 1);
        assert_eq!(got[&h], vec![0.5, -1.0, 2.0]);
        assert!(c.vectors("m2", &[h]).unwrap().is_empty());
        assert_eq!(c.vector_count("m1").unwrap(), 1);
    }

    #[test]
    fn store_get_lines_and_gc() {
        let dir = tempfile::tempdir().unwrap();
        let mut cache = OutputCache::open_in(dir.path()).unwrap();
        let text = "a\nb\nc\nd\n";
        let s = cache.store(text).unwrap();
        assert_eq!(s.cache_ref.len(), 16);
        assert!(!s.existed);
        assert!(cache.store(text).unwrap().existed);
        assert_eq!(cache.stats().unwrap(), (1, 8));
        assert_eq!(cache.get(&s.cache_ref).unwrap().as_deref(), Some(text));
        assert_eq!(cache.get("0000000000000000").unwrap(), None);
        assert_eq!(cache.gc(Duration::from_secs(3600)).unwrap().removed, 0);
        drop(cache);
        // Reopens, and the row survives.
        let cache = OutputCache::open_in(dir.path()).unwrap();
        assert_eq!(cache.stats().unwrap().0, 1);
    }

    /// Tester 12 T12-6: a paste holding a configured key is kept with the key taken out,
    /// under the ref of the paste as given (what its briefing names), read back whole and
    /// checked; an entry kept before with the key in it is kept again without it, and its
    /// chunks go.
    #[test]
    fn a_paste_holding_a_configured_key_is_kept_without_it_under_its_own_ref() {
        const KEY: &str = "sk-test-SECRET-0451-do-not-leak";
        let dir = tempfile::tempdir().unwrap();
        let text: String = (0..2_000)
            .map(|i| format!("line {i} of the log\n"))
            .chain(std::iter::once(format!("auth: Bearer {KEY}\n")))
            .collect();
        let as_given = cache_ref(text.as_bytes());
        // Kept before the keys were known: the key is in the file.
        let mut before = OutputCache::open_in(dir.path()).unwrap();
        assert_eq!(before.store(&text).unwrap().cache_ref, as_given);
        drop(before);
        let holds_key = || file_holds(dir.path(), KEY);
        assert!(holds_key());
        let secrets = std::sync::Arc::new(Secrets::of_keys([KEY]));
        let mut cache = OutputCache::open_in(dir.path())
            .unwrap()
            .with_secrets(secrets.clone());
        let s = cache.store(&text).unwrap();
        assert_eq!(s.cache_ref, as_given);
        assert!(!s.existed, "kept again, without the key");
        let kept = text.replace(KEY, "[REDACTED]");
        assert_eq!(
            cache.get(&as_given).unwrap().as_deref(),
            Some(kept.as_str())
        );
        assert_eq!(cache.stats().unwrap(), (1, kept.len()));
        // Stored again: the same entry.
        assert!(cache.store(&text).unwrap().existed);
        cache
            .conn
            .execute_batch("PRAGMA wal_checkpoint(TRUNCATE); VACUUM;")
            .unwrap();
        assert!(!holds_key(), "the old chunk went");
        // The check still holds: kept content that changes is damaged.
        cache
            .conn
            .execute("UPDATE chunks SET content = CAST('x' AS BLOB)", [])
            .unwrap();
        assert!(cache.get(&as_given).is_err());
    }

    /// Whether the cache file in `dir`, or its write-ahead log, holds `key`'s bytes.
    fn file_holds(dir: &Path, key: &str) -> bool {
        let mut all = std::fs::read(dir.join(CACHE_FILE)).unwrap();
        all.extend(std::fs::read(dir.join("cache.sqlite-wal")).unwrap_or_default());
        all.windows(key.len()).any(|w| w == key.as_bytes())
    }

    /// `ctxconsole scrub`: entries kept before the key was known hold it; a dry run finds
    /// them and changes nothing; a scrub keeps each again without the key, under its own ref
    /// and age, shares no chunk with the old content, and no byte of the key is left in the
    /// file or its log. An entry without the key is untouched.
    #[test]
    fn a_scrub_takes_a_key_out_of_entries_kept_before_it_was_known() {
        const KEY: &str = "sk-test-SECRET-0451-do-not-leak";
        let dir = tempfile::tempdir().unwrap();
        let holding: String = (0..3_000)
            .map(|i| format!("line {i} of the log\n"))
            .chain(std::iter::once(format!("auth: Bearer {KEY}\n")))
            .collect();
        let clean: String = (0..500).map(|i| format!("clean line {i}\n")).collect();
        let mut cache = OutputCache::open_in(dir.path()).unwrap();
        let (a, b) = (
            cache.store(&holding).unwrap().cache_ref,
            cache.store(&clean).unwrap().cache_ref,
        );
        cache
            .conn
            .execute("UPDATE entries SET created_at = 1000 WHERE ref = ?1", [&a])
            .unwrap();
        let holds_key = || file_holds(dir.path(), KEY);
        assert!(holds_key());
        let secrets = Secrets::of_keys([KEY]);
        assert_eq!(cache.scrub(&secrets, true).unwrap(), vec![a.clone()]);
        assert!(holds_key(), "a dry run changes nothing");
        assert_eq!(cache.get(&a).unwrap().as_deref(), Some(holding.as_str()));
        assert_eq!(cache.scrub(&secrets, false).unwrap(), vec![a.clone()]);
        assert!(!holds_key(), "no byte of the key is left in the file");
        let kept = holding.replace(KEY, "[REDACTED]");
        assert_eq!(cache.get(&a).unwrap().as_deref(), Some(kept.as_str()));
        assert_eq!(cache.get(&b).unwrap().as_deref(), Some(clean.as_str()));
        let age: i64 = cache
            .conn
            .query_row("SELECT created_at FROM entries WHERE ref = ?1", [&a], |r| {
                r.get(0)
            })
            .unwrap();
        assert_eq!(age, 1000, "the entry keeps its age");
        assert_eq!(cache.stats().unwrap(), (2, kept.len() + clean.len()));
        assert!(
            cache.scrub(&secrets, false).unwrap().is_empty(),
            "once is enough"
        );
    }

    #[test]
    fn a_foreign_file_is_refused_and_untouched() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(CACHE_FILE);
        let junk: Vec<u8> = (0..4096u32).map(|i| (i * 7 % 251) as u8).collect();
        std::fs::write(&path, &junk).unwrap();
        let err = OutputCache::open(&path).err().unwrap();
        assert!(
            err.to_string().contains("not a ctxconsole output cache"),
            "{err}"
        );
        assert_eq!(std::fs::read(&path).unwrap(), junk);
    }

    #[test]
    fn the_same_content_again_is_one_row_and_writes_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let mut cache = OutputCache::open_in(dir.path()).unwrap();
        let big = big_paste();
        let first = cache.store(&big).unwrap();
        // Empty the write-ahead log, then count the pages the repeats write into it.
        let frames = |cache: &OutputCache, mode: &str| -> i64 {
            cache
                .conn
                .query_row(&format!("PRAGMA wal_checkpoint({mode})"), [], |r| r.get(1))
                .unwrap()
        };
        frames(&cache, "TRUNCATE");
        let size = on_disk(cache.path());
        for _ in 0..3 {
            let again = cache.store(&big).unwrap();
            assert!(again.existed);
            assert_eq!(again.cache_ref, first.cache_ref);
        }
        assert_eq!(cache.stats().unwrap(), (1, big.len()));
        let written = frames(&cache, "PASSIVE");
        // At most the entry's age, once a second: never the content.
        assert!(
            written <= 6,
            "{written} pages written for content already stored"
        );
        // The log holds those pages (each with its 24-byte frame header) and nothing more.
        let grew = on_disk(cache.path()) - size;
        assert!(
            grew <= written as u64 * (4096 + 24) + 32,
            "the file grew by {grew}"
        );
    }

    fn big_paste() -> String {
        (0..60_000)
            .map(|i| {
                format!(
                    "{i:>8} | GET /api/v1/items/{} 200 {}ms\n",
                    i * 7919 % 100_003,
                    i % 977
                )
            })
            .collect()
    }

    #[test]
    fn a_paste_typed_around_is_written_once() {
        let dir = tempfile::tempdir().unwrap();
        let mut cache = OutputCache::open_in(dir.path()).unwrap();
        let paste = big_paste();
        let first = cache.store(&paste).unwrap();
        assert_eq!(first.written, paste.len());
        let size = on_disk(cache.path());
        // What the console previews at each pause while the operator types around the paste.
        let versions = [
            format!("{paste}summarise"),
            format!("{paste}summarise the errors"),
            format!("from the gateway:\n{paste}summarise the errors"),
        ];
        let mut written = 0;
        for v in &versions {
            let s = cache.store(v).unwrap();
            assert!(!s.existed);
            assert_eq!(
                cache.get(&s.cache_ref).unwrap().as_deref(),
                Some(v.as_str())
            );
            written += s.written;
        }
        assert!(
            written < 3 * CHUNK_MAX.min(paste.len() / 10),
            "{written} bytes written again"
        );
        let grew = on_disk(cache.path()) - size;
        assert!(
            grew < paste.len() as u64 / 4,
            "the file grew by {grew} for {} bytes",
            paste.len()
        );
        assert_eq!(
            cache.get(&first.cache_ref).unwrap().as_deref(),
            Some(paste.as_str())
        );
    }

    #[test]
    fn gc_gives_the_space_back_and_says_how_much() {
        let dir = tempfile::tempdir().unwrap();
        let mut cache = OutputCache::open_in(dir.path()).unwrap();
        let paste = big_paste();
        let old = cache.store(&paste).unwrap();
        let young = cache.store("a small note\n").unwrap();
        cache
            .conn
            .execute(
                "UPDATE entries SET created_at = 0 WHERE ref = ?1",
                [&old.cache_ref],
            )
            .unwrap();
        let before = on_disk(cache.path());
        assert!(before > paste.len() as u64);
        let done = cache.gc(Duration::from_secs(3600)).unwrap();
        assert_eq!(done.removed, 1);
        assert_eq!(done.file_bytes_before, before);
        assert_eq!(done.file_bytes_after, on_disk(cache.path()));
        assert!(done.bytes_freed() > paste.len() as u64 * 9 / 10, "{done:?}");
        assert_eq!(cache.get(&old.cache_ref).unwrap(), None);
        assert_eq!(
            cache.get(&young.cache_ref).unwrap().as_deref(),
            Some("a small note\n")
        );
        let none = cache.gc(Duration::from_secs(3600)).unwrap();
        assert_eq!((none.removed, none.bytes_freed()), (0, 0));
    }

    #[test]
    fn an_entry_from_schema_1_reads_back_and_damage_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(CACHE_FILE);
        let v1 = Schema {
            migrations: &SCHEMA.migrations[..1],
            ..SCHEMA
        };
        let (conn, _) = sqlite::open(&path, &v1).unwrap();
        let text = "kept\nfrom before\n";
        conn.execute(
            "INSERT INTO cache VALUES (?1, 5, ?2, 2, ?3)",
            params![
                cache_ref(text.as_bytes()),
                text.len() as i64,
                text.as_bytes()
            ],
        )
        .unwrap();
        drop(conn);
        let cache = OutputCache::open(&path).unwrap();
        let r = cache_ref(text.as_bytes());
        assert_eq!(cache.get(&r).unwrap().as_deref(), Some(text));
        // Migration 6 gave each chunk its size: what the bound counts.
        assert_eq!(cache.held_bytes().unwrap(), text.len() as u64);
        cache
            .conn
            .execute("UPDATE chunks SET content = X'6b65707400'", [])
            .unwrap();
        let err = cache.get(&r).unwrap_err().to_string();
        assert!(
            err.contains(&path.display().to_string()) && err.contains(&r),
            "{err}"
        );
    }

    #[test]
    fn gc_collects_vectors_unused_within_the_age_and_nothing_else() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(CACHE_FILE);
        // A cache from before vectors had a last use: its rows survive the migration,
        // counted as used when they were made.
        let v3 = Schema {
            migrations: &SCHEMA.migrations[..3],
            ..SCHEMA
        };
        let (conn, _) = sqlite::open(&path, &v3).unwrap();
        let (old, read_again, fresh) = (
            text_hash("old"),
            text_hash("read again"),
            text_hash("fresh"),
        );
        for h in [&old, &read_again] {
            conn.execute(
                "INSERT INTO vectors VALUES ('m', ?1, 5, 1, X'0000803f')",
                params![h],
            )
            .unwrap();
        }
        drop(conn);
        let mut cache = OutputCache::open(&path).unwrap();
        let used: i64 = cache
            .conn
            .query_row(
                "SELECT used_at FROM vectors WHERE text_hash = ?1",
                [&old],
                |r| r.get(0),
            )
            .unwrap();
        assert_eq!(used, 5);
        assert_eq!(cache.vector_total().unwrap(), 2);
        // One made now, one read now (its use recorded), an old paste and a new one.
        cache
            .keep_vectors("m", &[(fresh.clone(), vec![2.0])])
            .unwrap();
        cache
            .touch_vectors("m", std::slice::from_ref(&read_again))
            .unwrap();
        let old_paste = cache.store("an old paste\n").unwrap().cache_ref;
        cache
            .conn
            .execute(
                "UPDATE entries SET created_at = 5 WHERE ref = ?1",
                [&old_paste],
            )
            .unwrap();
        let new_paste = cache.store("a new paste\n").unwrap().cache_ref;

        let done = cache.gc(Duration::from_secs(7 * 86_400)).unwrap();
        assert_eq!((done.removed, done.vectors_removed), (1, 1));
        let left = cache
            .vectors("m", &[old.clone(), read_again.clone(), fresh.clone()])
            .unwrap();
        assert!(!left.contains_key(&old));
        assert_eq!(left[&read_again], vec![1.0]);
        assert_eq!(left[&fresh], vec![2.0]);
        assert_eq!(cache.get(&old_paste).unwrap(), None);
        assert_eq!(
            cache.get(&new_paste).unwrap().as_deref(),
            Some("a new paste\n")
        );
        // Again: nothing more is old enough.
        let again = cache.gc(Duration::from_secs(7 * 86_400)).unwrap();
        assert_eq!((again.removed, again.vectors_removed), (0, 0));
        assert_eq!(cache.vector_total().unwrap(), 2);
    }

    /// Tester 16 F4: the last-use stamp waited out another process's write lock (a minute)
    /// and then failed. It is skipped while the lock is held, leaving the rows as they were,
    /// and the connection waits the full bound again for what matters; vectors to keep wait,
    /// and a wait that runs out is an error naming the file and saying nothing was stored
    /// (it was SQLite's bare "database is locked").
    #[test]
    fn the_last_use_stamp_never_waits_for_another_writer() {
        let dir = tempfile::tempdir().unwrap();
        let mut cache = OutputCache::open_in(dir.path()).unwrap();
        let h = text_hash("find a hotel");
        cache.keep_vectors("m", &[(h.clone(), vec![1.0])]).unwrap();
        cache
            .conn
            .execute("UPDATE vectors SET used_at = 5", [])
            .unwrap();
        let used = |cache: &OutputCache| -> i64 {
            cache
                .conn
                .query_row("SELECT used_at FROM vectors", [], |r| r.get(0))
                .unwrap()
        };
        let holder = Connection::open(cache.path()).unwrap();
        holder.execute_batch("BEGIN EXCLUSIVE").unwrap();
        assert!(
            cache.touch_vectors("m", std::slice::from_ref(&h)).is_ok(),
            "skipped, not an error"
        );
        assert_eq!(used(&cache), 5);
        let wait: i64 = cache
            .conn
            .query_row("PRAGMA busy_timeout", [], |r| r.get(0))
            .unwrap();
        assert_eq!(wait, sqlite::BUSY_TIMEOUT.as_millis() as i64);
        // A test need not wait the minute to see a wait run out.
        cache.conn.busy_timeout(Duration::from_millis(50)).unwrap();
        let err = cache
            .keep_vectors("m", &[(text_hash("other"), vec![2.0])])
            .unwrap_err();
        let said = format!("{err:#}");
        assert!(
            said.contains(&cache.path().display().to_string())
                && said.contains("keeping 1 sentence vector:")
                && said.contains("for 50 ms")
                && said.contains("nothing was stored"),
            "{said}"
        );
        holder.execute_batch("ROLLBACK").unwrap();
        cache.touch_vectors("m", std::slice::from_ref(&h)).unwrap();
        assert!(used(&cache) > 5);
    }

    /// Tester 16 F9: a vector whose last use is not a whole number (text, which SQLite
    /// orders above every number) or lies in the future was never collected, and reading
    /// it again left it so. `cache gc` counts such a stamp as stale (a few minutes ahead is
    /// clock slack, kept); a read or a re-embedding writes it anew.
    #[test]
    fn a_last_use_that_is_not_a_time_is_stale_and_rewritten_when_used() {
        let dir = tempfile::tempdir().unwrap();
        let mut cache = OutputCache::open_in(dir.path()).unwrap();
        let rows: Vec<(String, Vec<f32>)> = ["text", "future", "slack", "fresh", "read", "again"]
            .iter()
            .map(|t| (text_hash(t), vec![1.0]))
            .collect();
        cache.keep_vectors("m", &rows).unwrap();
        let now = now_secs();
        let set = |cache: &OutputCache, t: &str, used: rusqlite::types::Value| {
            cache
                .conn
                .execute(
                    "UPDATE vectors SET used_at = ?2 WHERE text_hash = ?1",
                    params![text_hash(t), used],
                )
                .unwrap();
        };
        use rusqlite::types::Value::{Integer, Text};
        set(&cache, "text", Text("x".into()));
        set(&cache, "future", Integer(99_999_999_999_999));
        set(&cache, "slack", Integer(now + 10));
        set(&cache, "read", Text("x".into()));
        set(&cache, "again", Text("x".into()));
        cache.touch_vectors("m", &[text_hash("read")]).unwrap();
        cache
            .keep_vectors("m", &[(text_hash("again"), vec![2.0])])
            .unwrap();
        let stamp = |t: &str| -> (String, i64) {
            cache
                .conn
                .query_row(
                    "SELECT typeof(used_at), CAST(used_at AS INTEGER) FROM vectors WHERE text_hash = ?1",
                    [text_hash(t)],
                    |r| Ok((r.get(0)?, r.get(1)?)),
                )
                .unwrap()
        };
        for t in ["read", "again"] {
            let (kind, at) = stamp(t);
            assert!(
                kind == "integer" && (now..=now_secs()).contains(&at),
                "{t}: {kind} {at}"
            );
        }
        let done = cache.gc(Duration::from_secs(7 * 86_400)).unwrap();
        assert_eq!(done.vectors_removed, 2, "{done:?}");
        let left = cache
            .vectors(
                "m",
                &rows.iter().map(|(h, _)| h.clone()).collect::<Vec<_>>(),
            )
            .unwrap();
        assert!(!left.contains_key(&text_hash("text")) && !left.contains_key(&text_hash("future")));
        assert_eq!(left.len(), 4);
    }

    /// Tester 21 F5: two processes storing at once, each evicting to stay within the bound:
    /// eviction runs in the store's write transaction, so the cache ends within the bound,
    /// every entry it lists reads back whole, and no chunk is left that no entry uses.
    #[test]
    fn two_writers_evicting_at_once_leave_the_cache_within_its_bound_and_whole() {
        const BOUND: u64 = 1 << 20;
        let dir = tempfile::tempdir().unwrap();
        drop(OutputCache::open_in(dir.path()).unwrap());
        let paste = |w: usize, i: usize| -> String {
            (0..6_000)
                .map(|n| format!("writer {w} paste {i} line {n}: GET /api/v1/items 200\n"))
                .collect()
        };
        let writers: Vec<_> = (0..2)
            .map(|w| {
                let dir = dir.path().to_path_buf();
                std::thread::spawn(move || {
                    for i in 0..5 {
                        // A handle per paste, as each request opens one.
                        let mut cache = OutputCache::open_in(&dir).unwrap().with_max_bytes(BOUND);
                        let text = paste(w, i);
                        let s = cache.store(&text).unwrap();
                        assert!(s.bytes as u64 <= BOUND);
                        assert_eq!(cache.get(&s.cache_ref).unwrap().as_deref(), Some(&*text));
                    }
                })
            })
            .collect();
        for w in writers {
            w.join().unwrap();
        }
        let cache = OutputCache::open_in(dir.path()).unwrap();
        let held = cache.held_bytes().unwrap();
        assert!(held <= BOUND && held > BOUND / 3, "{held}");
        let refs: Vec<String> = cache
            .conn
            .prepare("SELECT ref FROM entries")
            .unwrap()
            .query_map([], |r| r.get(0))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        assert!(!refs.is_empty());
        for r in &refs {
            assert!(cache.get(r).unwrap().is_some(), "{r}");
        }
        let orphans: i64 = cache
            .conn
            .query_row(
                "SELECT COUNT(*) FROM chunks WHERE id NOT IN (SELECT chunk FROM entry_chunks)",
                [],
                |r| r.get(0),
            )
            .unwrap();
        assert_eq!(orphans, 0);
        let counted: i64 = cache
            .conn
            .query_row("SELECT SUM(length(content)) FROM chunks", [], |r| r.get(0))
            .unwrap();
        assert_eq!(counted as u64, held, "each chunk's size is its content's");
    }

    /// A paste over the bound is refused naming it, and one that only fits by evicting a
    /// part this handle stored (the same request's) is refused too: nothing is evicted.
    #[test]
    fn a_paste_over_the_bound_or_past_the_requests_own_parts_is_refused() {
        const BOUND: u64 = 1 << 20;
        let dir = tempfile::tempdir().unwrap();
        let text = |tag: &str, lines: usize| -> String {
            (0..lines)
                .map(|n| format!("{tag} line {n} of the paste\n"))
                .collect()
        };
        let mut other = OutputCache::open_in(dir.path())
            .unwrap()
            .with_max_bytes(BOUND);
        let old = other.store(&text("old", 14_000)).unwrap();
        let mut cache = OutputCache::open_in(dir.path())
            .unwrap()
            .with_max_bytes(BOUND);
        let err = format!("{:#}", cache.store(&text("huge", 60_000)).unwrap_err());
        assert!(
            err.contains("is larger than the whole output cache may hold, 1048576 bytes ([cache] max_bytes in config.toml); not stored"),
            "{err}"
        );
        let first = cache.store(&text("first", 14_000)).unwrap();
        assert_eq!(first.evicted, []);
        let second = cache.store(&text("second", 14_000)).unwrap();
        assert_eq!(
            second
                .evicted
                .iter()
                .map(|e| &e.cache_ref)
                .collect::<Vec<_>>(),
            [&old.cache_ref],
            "the other handle's entry makes room; this one's are kept"
        );
        let err = format!("{:#}", cache.store(&text("third", 14_000)).unwrap_err());
        assert!(
            err.contains("does not fit in the output cache beside the other parts of this request"),
            "{err}"
        );
        for s in [&first, &second] {
            assert!(cache.get(&s.cache_ref).unwrap().is_some());
        }
        assert!(cache.held_bytes().unwrap() <= BOUND);
    }

    #[test]
    fn other_content_behind_a_held_reference_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let mut cache = OutputCache::open_in(dir.path()).unwrap();
        let s = cache.store("first\n").unwrap();
        // As if another content hashed to the same 64 bits.
        cache
            .conn
            .execute(
                "UPDATE entries SET bytes = 99 WHERE ref = ?1",
                [&s.cache_ref],
            )
            .unwrap();
        let err = cache.store("first\n").unwrap_err().to_string();
        assert!(
            err.contains(&s.cache_ref) && err.contains("other content"),
            "{err}"
        );
    }

    #[test]
    fn chunks_are_cut_by_content_not_position() {
        let paste = big_paste();
        let a = chunks(paste.as_bytes());
        assert!(a.len() > 10, "{}", a.len());
        assert_eq!(a.concat(), paste.as_bytes());
        let shifted = format!("one more line at the top\n{paste}");
        let b = chunks(shifted.as_bytes());
        let same = b.iter().filter(|c| a.contains(c)).count();
        assert!(same + 2 >= a.len(), "{same} of {} chunks shared", a.len());
        assert!(a.iter().all(|c| c.len() <= CHUNK_MAX));
        let one_line = "x".repeat(3 * CHUNK_MAX);
        assert_eq!(chunks(one_line.as_bytes()).len(), 3);
    }
}
