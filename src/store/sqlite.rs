//! Opening one of our SQLite files safely: a file that is not ours, is damaged, or was
//! written by a newer ctxconsole is refused before anything is written to it; ours is
//! migrated forward, each step in its own transaction.

use anyhow::Context;
use rusqlite::{Connection, OpenFlags};
use std::path::Path;
use std::time::Duration;

use crate::exit::bad_input;

/// What a file is and how its schema grows.
pub struct Schema {
    /// `PRAGMA application_id`: marks the file as this kind of ctxconsole file.
    pub application_id: i64,
    /// For messages: "output cache", "history store".
    pub kind: &'static str,
    /// Migration `i` takes the schema from version `i` to `i + 1`.
    pub migrations: &'static [&'static str],
}

impl Schema {
    pub fn version(&self) -> i64 {
        self.migrations.len() as i64
    }
}

/// How long a writer waits for another process's transaction before giving up.
pub const BUSY_TIMEOUT: Duration = Duration::from_secs(60);

/// Open (creating when missing or empty) a file of `schema`. Returns the connection and
/// whether the file was created now.
pub fn open(path: &Path, schema: &Schema) -> anyhow::Result<(Connection, bool)> {
    let name = path.display().to_string();
    let kind = schema.kind;
    let created = create_whole(path, schema)?;
    let existed = std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.len() > 0);
    if path.is_dir() {
        return Err(bad_input(format!(
            "{name}: is a directory, not a ctxconsole {kind}"
        )));
    }
    let mut conn = Connection::open_with_flags(
        path,
        OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_CREATE,
    )
    .with_context(|| format!("{name}: cannot open the {kind}"))?;
    conn.busy_timeout(BUSY_TIMEOUT)?;
    let not_ours = |detail: String| {
        bad_input(format!(
            "{name}: not a ctxconsole {kind} ({detail}); it was left untouched: move it aside or point ctxconsole elsewhere"
        ))
    };
    let mut version = 0;
    if existed {
        // Reads only: a foreign or damaged file must come out of this byte for byte.
        let app: i64 = conn
            .query_row("PRAGMA application_id", [], |r| r.get(0))
            .map_err(|e| not_ours(e.to_string()))?;
        if app != schema.application_id {
            return Err(not_ours(format!("application id {app:#x}")));
        }
        version = conn
            .query_row("PRAGMA user_version", [], |r| r.get(0))
            .map_err(|e| not_ours(e.to_string()))?;
        if version > schema.version() {
            return Err(bad_input(format!(
                "{name}: written by a newer ctxconsole (schema {version}, this one knows {}); not touched",
                schema.version()
            )));
        }
    }
    set_wal(&conn).with_context(|| format!("{name}: setting WAL"))?;
    if !existed {
        conn.pragma_update(None, "application_id", schema.application_id)
            .with_context(|| format!("{name}: creating the {kind}"))?;
    }
    for (from, sql) in schema.migrations.iter().enumerate().skip(version as usize) {
        // Another process may be creating or migrating the same file: take the write lock,
        // then look again.
        let tx = conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
        let now: i64 = tx.query_row("PRAGMA user_version", [], |r| r.get(0))?;
        if now > from as i64 {
            continue;
        }
        tx.execute_batch(sql)
            .and_then(|()| tx.pragma_update(None, "user_version", from as i64 + 1))
            .with_context(|| format!("{name}: migrating the {kind} to schema {}", from + 1))?;
        tx.commit()?;
    }
    Ok((conn, created || !existed))
}

/// A missing file is made whole under a private temporary name beside it (0600, which SQLite
/// gives its -wal and -shm files too; WAL; application id; every migration) and then linked
/// into place: no other process ever opens it half made, and a race to create it leaves one
/// file. Returns whether this call placed it.
fn create_whole(path: &Path, schema: &Schema) -> anyhow::Result<bool> {
    let Some(tmp) = crate::fsio::new_private_file_beside(path)? else {
        return Ok(false);
    };
    // The temporary file exists (empty), so this open initialises it in place.
    let made = open(&tmp, schema).map(drop);
    let placed = made.and_then(|()| Ok(crate::fsio::link_into_place(&tmp, path)?));
    for leftover in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{leftover}", tmp.display()));
    }
    placed.with_context(|| format!("{}: creating the {}", path.display(), schema.kind))
}

/// Switch to WAL unless already there. The switch needs the file to itself and SQLite does
/// not wait for that on its own, so a first run racing another process retries briefly.
fn set_wal(conn: &Connection) -> rusqlite::Result<()> {
    let deadline = std::time::Instant::now() + BUSY_TIMEOUT;
    loop {
        let mode: String = conn.query_row("PRAGMA journal_mode", [], |r| r.get(0))?;
        if mode.eq_ignore_ascii_case("wal") {
            return Ok(());
        }
        match conn.pragma_update(None, "journal_mode", "WAL") {
            Err(rusqlite::Error::SqliteFailure(e, _))
                if e.code == rusqlite::ErrorCode::DatabaseBusy
                    && std::time::Instant::now() < deadline =>
            {
                std::thread::sleep(Duration::from_millis(20));
            }
            other => return other,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const V1: &[&str] = &["CREATE TABLE a (x INTEGER);"];
    const V2: &[&str] = &[
        "CREATE TABLE a (x INTEGER);",
        "ALTER TABLE a ADD COLUMN y TEXT;",
    ];

    fn schema(migrations: &'static [&'static str]) -> Schema {
        Schema {
            application_id: 0x7465_7374,
            kind: "test file",
            migrations,
        }
    }

    #[test]
    fn migrates_forward_and_refuses_newer_or_foreign() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.sqlite");
        let (conn, created) = open(&path, &schema(V1)).unwrap();
        assert!(created);
        conn.execute("INSERT INTO a(x) VALUES (1)", []).unwrap();
        drop(conn);
        let (conn, created) = open(&path, &schema(V2)).unwrap();
        assert!(!created);
        let (x, y): (i64, Option<String>) = conn
            .query_row("SELECT x, y FROM a", [], |r| Ok((r.get(0)?, r.get(1)?)))
            .unwrap();
        assert_eq!((x, y), (1, None));
        drop(conn);
        let err = open(&path, &schema(V1)).err().unwrap().to_string();
        assert!(err.contains("newer ctxconsole"), "{err}");
        let other = Schema {
            application_id: 1,
            kind: "other",
            migrations: V1,
        };
        let err = open(&path, &other).err().unwrap().to_string();
        assert!(err.contains("not a ctxconsole other"), "{err}");
    }
}
