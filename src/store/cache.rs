//! The output cache (DESIGN §2.7): full content that entered the context as a briefing,
//! kept in SQLite in the data directory, keyed by content hash, served whole or by line
//! range, collected by age.

use anyhow::Context;
use rusqlite::{Connection, OptionalExtension, params};
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::core::gate::line_range;
use crate::store::now_secs;
use crate::store::sqlite::{self, Schema};

pub const CACHE_FILE: &str = "cache.sqlite";
const SCHEMA: Schema = Schema {
    // "ctxc"
    application_id: 0x6374_7863,
    kind: "output cache",
    migrations: &["CREATE TABLE cache (
             ref TEXT PRIMARY KEY,
             created_at INTEGER NOT NULL,
             bytes INTEGER NOT NULL,
             lines INTEGER NOT NULL,
             content BLOB NOT NULL
         );
         CREATE INDEX cache_created ON cache(created_at);"],
};

pub struct OutputCache {
    conn: Connection,
    path: PathBuf,
}

/// What `store` did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stored {
    pub cache_ref: String,
    pub bytes: usize,
    pub lines: usize,
    /// The same content was already cached.
    pub existed: bool,
}

/// The reference for content: 16 hex digits of its SHA-256.
pub fn cache_ref(content: &[u8]) -> String {
    let digest = Sha256::digest(content);
    digest[..8].iter().map(|b| format!("{b:02x}")).collect()
}

impl OutputCache {
    /// Open (creating when missing) the cache in `dir`. A file that is not a ctxconsole
    /// cache is refused and left as it is.
    pub fn open_in(dir: &Path) -> anyhow::Result<OutputCache> {
        std::fs::create_dir_all(dir)
            .with_context(|| format!("creating the data directory {}", dir.display()))?;
        Self::open(&dir.join(CACHE_FILE))
    }

    pub fn open(path: &Path) -> anyhow::Result<OutputCache> {
        let (conn, _) = sqlite::open(path, &SCHEMA)?;
        Ok(OutputCache {
            conn,
            path: path.to_path_buf(),
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Keep `content`; the same content stored twice is one row (its age restarts).
    pub fn store(&self, content: &str) -> anyhow::Result<Stored> {
        sqlite::ensure_writable(&self.conn, &self.path, SCHEMA.kind, "storing a paste")?;
        let cache_ref = cache_ref(content.as_bytes());
        let lines = content.lines().count();
        let changed = self
            .conn
            .execute(
                "INSERT INTO cache(ref, created_at, bytes, lines, content) VALUES (?1, ?2, ?3, ?4, ?5)
                 ON CONFLICT(ref) DO NOTHING",
                params![cache_ref, now_secs(), content.len() as i64, lines as i64, content.as_bytes()],
            )
            .with_context(|| format!("{}: storing {} bytes", self.path.display(), content.len()))?;
        if changed == 0 {
            self.conn.execute(
                "UPDATE cache SET created_at = ?2 WHERE ref = ?1",
                params![cache_ref, now_secs()],
            )?;
        }
        Ok(Stored {
            cache_ref,
            bytes: content.len(),
            lines,
            existed: changed == 0,
        })
    }

    /// The whole content, or `None` for an unknown ref.
    pub fn get(&self, cache_ref: &str) -> anyhow::Result<Option<String>> {
        let bytes: Option<Vec<u8>> = self
            .conn
            .query_row(
                "SELECT content FROM cache WHERE ref = ?1",
                params![cache_ref.to_ascii_lowercase()],
                |r| r.get(0),
            )
            .optional()
            .with_context(|| format!("{}: reading {cache_ref}", self.path.display()))?;
        bytes
            .map(|b| {
                String::from_utf8(b).map_err(|_| {
                    anyhow::anyhow!(
                        "{}: entry {cache_ref} is damaged (not UTF-8)",
                        self.path.display()
                    )
                })
            })
            .transpose()
    }

    /// Lines `a..=b` (1-based) of an entry.
    pub fn get_lines(&self, cache_ref: &str, a: usize, b: usize) -> anyhow::Result<Option<String>> {
        Ok(self.get(cache_ref)?.map(|t| line_range(&t, a, b)))
    }

    /// Remove entries older than `max_age`. Returns how many went.
    pub fn gc(&self, max_age: Duration) -> anyhow::Result<usize> {
        sqlite::ensure_writable(
            &self.conn,
            &self.path,
            SCHEMA.kind,
            "collecting old entries",
        )?;
        let cutoff = now_secs() - max_age.as_secs() as i64;
        let n = self
            .conn
            .execute("DELETE FROM cache WHERE created_at < ?1", params![cutoff])?;
        Ok(n)
    }

    /// (entries, bytes) held.
    pub fn stats(&self) -> anyhow::Result<(usize, usize)> {
        let (n, b): (i64, i64) = self.conn.query_row(
            "SELECT COUNT(*), COALESCE(SUM(bytes), 0) FROM cache",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )?;
        Ok((n as usize, b as usize))
    }
}

/// `30s`, `15m`, `24h`, `7d`, `2w`.
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let s = s.trim();
    let split = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
    let (num, unit) = s.split_at(split);
    let n: u64 = num
        .parse()
        .map_err(|_| format!("'{s}': expected a number and a unit, like 24h or 7d"))?;
    if unit == "ms" {
        return Ok(Duration::from_millis(n));
    }
    let secs = match unit {
        "s" => 1,
        "m" => 60,
        "h" => 3600,
        "d" | "" => 86_400,
        "w" => 7 * 86_400,
        _ => return Err(format!("'{s}': unknown unit '{unit}' (ms, s, m, h, d, w)")),
    };
    Ok(Duration::from_secs(n * secs))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn store_get_lines_and_gc() {
        let dir = tempfile::tempdir().unwrap();
        let cache = OutputCache::open_in(dir.path()).unwrap();
        let text = "a\nb\nc\nd\n";
        let s = cache.store(text).unwrap();
        assert_eq!(s.cache_ref.len(), 16);
        assert!(!s.existed);
        assert!(cache.store(text).unwrap().existed);
        assert_eq!(cache.stats().unwrap(), (1, 8));
        assert_eq!(cache.get(&s.cache_ref).unwrap().as_deref(), Some(text));
        assert_eq!(
            cache.get_lines(&s.cache_ref, 2, 3).unwrap().as_deref(),
            Some("b\nc\n")
        );
        assert_eq!(cache.get("0000000000000000").unwrap(), None);
        assert_eq!(cache.gc(Duration::from_secs(3600)).unwrap(), 0);
        drop(cache);
        // Reopens, and the row survives.
        let cache = OutputCache::open_in(dir.path()).unwrap();
        assert_eq!(cache.stats().unwrap().0, 1);
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
    fn durations() {
        assert_eq!(parse_duration("24h").unwrap(), Duration::from_secs(86_400));
        assert_eq!(
            parse_duration("7d").unwrap(),
            Duration::from_secs(7 * 86_400)
        );
        assert!(parse_duration("x").is_err());
        assert!(parse_duration("3y").is_err());
    }
}
