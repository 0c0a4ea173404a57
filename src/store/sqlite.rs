//! Opening one of our SQLite files safely: a file that is not ours, is damaged, or was
//! written by a newer ctxconsole is refused before anything is written to it; ours is
//! migrated forward, each step in its own transaction.

use crate::core::terminal_text::ShownPath;
use anyhow::Context;
use rusqlite::{Connection, ErrorCode, MAIN_DB, OpenFlags};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Duration;

use crate::exit::bad_input;

/// What a file is and how its schema grows.
pub struct Schema {
    /// `PRAGMA application_id`: marks the file as this kind of ctxconsole file.
    pub application_id: i64,
    /// For messages: "output cache", "history store".
    pub kind: &'static str,
    /// Who likely held the write lock when a writer waited it out, for the message: "an
    /// import?" for the history store.
    pub long_writer: &'static str,
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

/// Take the write lock of the file at `path` (a transaction that locks at once, so two
/// writers queue instead of failing half-way). A writer that waited [`BUSY_TIMEOUT`] for
/// another process to let go is told so in one line naming the file and what waited, not
/// SQLite's "database is locked" (tester 6 F4); nothing is written then.
pub fn begin_write<'c>(
    conn: &'c mut Connection,
    path: &Path,
    schema: &Schema,
    doing: &str,
) -> anyhow::Result<rusqlite::Transaction<'c>> {
    begin_write_waiting(conn, path, schema, doing, BUSY_TIMEOUT)
}

/// [`begin_write`] on a connection whose busy timeout was set to `waited` (see
/// [`set_lock_wait`]), so the message says how long it really waited.
pub fn begin_write_waiting<'c>(
    conn: &'c mut Connection,
    path: &Path,
    schema: &Schema,
    doing: &str,
    waited: Duration,
) -> anyhow::Result<rusqlite::Transaction<'c>> {
    conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
        .map_err(|e| lock_failure(e, path, schema, doing, waited))
}

/// Wait at most `wait` (not [`BUSY_TIMEOUT`]) for another process's write lock: the
/// console's retry of answers it could not store, and its last try when quitting, wait
/// less than a minute.
pub fn set_lock_wait(conn: &Connection, wait: Duration) -> anyhow::Result<()> {
    conn.busy_timeout(wait)?;
    Ok(())
}

/// How long the connection waits for another process's write lock now: [`BUSY_TIMEOUT`],
/// or what [`set_lock_wait`] gave it.
pub fn lock_wait(conn: &Connection) -> rusqlite::Result<Duration> {
    let ms: i64 = conn.query_row("PRAGMA busy_timeout", [], |r| r.get(0))?;
    Ok(Duration::from_millis(u64::try_from(ms).unwrap_or(0)))
}

/// A wait as the lock message says it: whole seconds (`60 s`), else milliseconds.
fn wait_words(waited: Duration) -> String {
    if waited.subsec_nanos() == 0 {
        format!("{} s", waited.as_secs())
    } else {
        format!("{} ms", waited.as_millis())
    }
}

/// Another process held the write lock for the whole wait: nothing was written, and a
/// writer with more to write would wait as long again ([`waited_out_for_the_lock`]).
#[derive(Debug)]
pub struct LockWaitedOut(String);

impl std::fmt::Display for LockWaitedOut {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for LockWaitedOut {}

/// Set when this process runs calls at once that may write the same store (the MCP
/// server): a write lock held elsewhere may then be one of its own calls.
static WRITERS_IN_THIS_PROCESS: std::sync::atomic::AtomicBool =
    std::sync::atomic::AtomicBool::new(false);

/// This process runs calls at once that may write the same store (the MCP server's compute
/// places and its `record_execution`s): a write lock held elsewhere is said as held by
/// "another call of this server or another process", not "another process", which sent an
/// operator looking for a process that did not exist (tester 20 F8).
pub fn writers_in_this_process() {
    WRITERS_IN_THIS_PROCESS.store(true, std::sync::atomic::Ordering::Relaxed);
}

/// Who may hold a write lock this connection does not: what is known of it.
fn lock_holder() -> &'static str {
    if WRITERS_IN_THIS_PROCESS.load(std::sync::atomic::Ordering::Relaxed) {
        "another call of this server or another process"
    } else {
        "another process"
    }
}

/// Whether `e` is (or wraps) a write that waited out another process's write lock.
pub fn waited_out_for_the_lock(e: &anyhow::Error) -> bool {
    e.chain().any(|c| c.is::<LockWaitedOut>())
}

/// A failure to take the write lock: held too long by another process, in plain words with
/// the likeliest holder ([`Schema::long_writer`]); anything else with the file and what was
/// being done.
fn lock_failure(
    e: rusqlite::Error,
    path: &Path,
    schema: &Schema,
    doing: &str,
    waited: Duration,
) -> anyhow::Error {
    let name = path.shown();
    if matches!(
        e.sqlite_error_code(),
        Some(ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked)
    ) {
        return anyhow::Error::new(LockWaitedOut(format!(
            "{doing}: {} held the write lock of {name} for {} ({}); nothing was stored",
            lock_holder(),
            wait_words(waited),
            schema.long_writer
        )));
    }
    access_failure(e, path, &format!("{doing}: waiting for the write lock"))
}

/// SQLite's error taking or probing a write lock: with the file beside it that refused, when
/// one did ([`sidecar_words`]), else with the file and what was being done.
fn access_failure(e: rusqlite::Error, path: &Path, doing: &str) -> anyhow::Error {
    match sidecar_words(&e, path) {
        Some(words) => anyhow::anyhow!("{}: {doing}: {words} ({e})", path.shown()),
        None => anyhow::Error::new(e).context(format!("{}: {doing}", path.shown())),
    }
}

/// Open (creating when missing or empty) a file of `schema`. Returns the connection and
/// whether the file was created now.
pub fn open(path: &Path, schema: &Schema) -> anyhow::Result<(Connection, bool)> {
    open_waiting(path, schema, BUSY_TIMEOUT)
}

/// [`open`], waiting at most `wait` (not [`BUSY_TIMEOUT`]) for another process's lock:
/// one that keeps the file from being read (SQLite's exclusive locking mode) is said before
/// the wait starts ([`reader_note`]) and, held past it, as the lock it is, never as a file
/// that is not ours or is damaged (tester 22 F3). The connection keeps waiting `wait`.
pub fn open_waiting(
    path: &Path,
    schema: &Schema,
    wait: Duration,
) -> anyhow::Result<(Connection, bool)> {
    let name = path.shown().to_string();
    let kind = schema.kind;
    // A missing file is made under a longer temporary name first ([`create_whole`]).
    let new = std::fs::symlink_metadata(path).is_err();
    fits_sqlite_path(path, kind, new.then(crate::fsio::temp_name_extra))?;
    let created = create_whole(path, schema)?;
    let existed = std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.len() > 0);
    if path.is_dir() {
        return Err(bad_input(format!(
            "{name}: is a directory, not a ctxconsole {kind}"
        )));
    }
    // An empty file the store is created in (one made with `touch`, say) is made private
    // as a file ctxconsole creates is (tester 14 F9: it was filled and left 0644).
    if !created && !existed && path.is_file() {
        let file = std::fs::File::open(path)
            .map_err(|e| anyhow::anyhow!("{name}: cannot open the {kind}: {e}"))?;
        crate::fsio::make_private(
            &file,
            path,
            kind,
            &format!("before creating the {kind} in it"),
        )?;
    }
    // SQLite gives the -wal and -shm it creates the mode of the file, so a run on a store
    // made read-only (0400) left a read-only -shm that kept refusing writes once the store
    // was writable again (tester 21 F6). Those this run creates get the store's own 0600.
    let missing = missing_sidecars(path);
    let opened = open_made(path, schema, created, existed, wait);
    private_sidecars(path, missing);
    opened
}

/// The files SQLite keeps beside a file in WAL mode.
const SIDECARS: [&str; 2] = ["-wal", "-shm"];

/// Which of [`SIDECARS`] are not beside `path` now.
fn missing_sidecars(path: &Path) -> [bool; 2] {
    SIDECARS.map(|s| std::fs::symlink_metadata(crate::fsio::with_suffix(path, s)).is_err())
}

/// Each of [`SIDECARS`] that was `missing` and is now a file, or is empty, made private
/// (0600), as every file a store makes is: SQLite gives an empty one the file's mode each time
/// it opens it. Best effort: one another process made meanwhile has the same mode, and one
/// that cannot be changed is said when a write needs it ([`sidecar_words`]).
fn private_sidecars(path: &Path, missing: [bool; 2]) {
    use std::os::unix::fs::PermissionsExt;
    for (suffix, was_missing) in SIDECARS.iter().zip(missing) {
        let file = crate::fsio::with_suffix(path, suffix);
        if std::fs::symlink_metadata(&file).is_ok_and(|m| {
            m.is_file()
                && (was_missing || m.len() == 0)
                && m.permissions().mode() & 0o777 != crate::fsio::PRIVATE_FILE_MODE
        }) {
            let _ = std::fs::set_permissions(
                &file,
                std::fs::Permissions::from_mode(crate::fsio::PRIVATE_FILE_MODE),
            );
        }
    }
}

/// [`open`] once the file is there (or is to be created by SQLite): `created` when
/// [`create_whole`] placed it, `existed` when it holds data.
fn open_made(
    path: &Path,
    schema: &Schema,
    created: bool,
    existed: bool,
    wait: Duration,
) -> anyhow::Result<(Connection, bool)> {
    let name = path.shown().to_string();
    let kind = schema.kind;
    read_without_room(path, false);
    let mut conn = Connection::open_with_flags(
        path,
        OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_CREATE,
    )
    .map_err(|e| match existed {
        false if is_access_error(&e) => anyhow::anyhow!(
            "{name}: cannot create the {kind}: its directory is read-only or not accessible ({e})"
        ),
        true if is_access_error(&e) => cannot_access(path, kind, &e.to_string()),
        _ => anyhow::Error::new(e).context(format!("{name}: cannot open the {kind}")),
    })?;
    conn.busy_timeout(wait)?;
    let mut version = 0;
    if existed {
        // Said before a wait for another process's lock starts, not sat through in silence.
        if let Some(note) = reader_note(&conn, path, wait) {
            crate::fsio::notice(note);
        }
        // Reads only: a foreign or damaged file must come out of this byte for byte.
        let app = match application_id(&conn) {
            // A read of a WAL file needs its -shm beside it; a directory that cannot take
            // one is read-only: open the file read-only for what only reads.
            Err(e) if is_access_error(&e) => {
                conn = open_read_only(path, wait)
                    .map_err(|e| cannot_access(path, kind, &e.to_string()))?;
                application_id(&conn)
            }
            // No room for the -shm a WAL read needs (review 49 L4: on a full disk, the last
            // connection to close having removed it, every read failed, `history export`
            // too). A -wal holding commits must be read through a -shm: the error stays,
            // and the few bytes of -shm the try left go (the -wal is kept).
            Err(e) if shm_refused(&e) && wal_holds_commits(path) => {
                let failed = known_version(&conn, Err(e), path, schema, wait).err();
                drop(conn);
                remove_unused_sidecars(path);
                return Err(failed.unwrap_or_else(|| {
                    anyhow::anyhow!("{name}: cannot read the {kind}: {SHM_NO_ROOM}")
                }));
            }
            // With no commit in a -wal that the file lacks, the file read immutable is the
            // whole store, and needs no -shm: read as it is, saying why.
            Err(e) if shm_refused(&e) => {
                let said = e.to_string();
                conn = open_read_only(path, wait).map_err(|e| {
                    anyhow::Error::new(e).context(format!("{name}: cannot open the {kind}"))
                })?;
                remove_unused_sidecars(path);
                read_without_room(path, true);
                crate::fsio::notice(format!(
                    "{name}: {}, so the {kind} was read as it is, without one; nothing can be \
                     stored in it until there is room ({said})",
                    SHM_NO_ROOM
                ));
                application_id(&conn)
            }
            other => other,
        };
        version = known_version(&conn, app, path, schema, wait)?;
        // Every write checks first (ensure_writable); a read only while the check is cheap.
        let size = std::fs::metadata(path).map_or(0, |m| m.len());
        if size <= QUICK_CHECK_ON_OPEN_MAX_BYTES || version < schema.version() {
            quick_check_once(&conn, path, &name, kind)?;
        }
        if conn.is_readonly(MAIN_DB)? {
            return read_only_as_it_is(conn, path, schema, version);
        }
    }
    if let Err(e) = set_wal(&conn, wait) {
        if is_busy(&e) {
            return Err(locked_out(path, kind, wait));
        }
        if existed && is_access_error(&e) {
            // A writable file whose directory cannot take a -wal: a rollback-journal copy
            // (`.backup`, `VACUUM INTO`) on a read-only mount (tester 28 N2: "setting WAL:
            // attempt to write a readonly database"). Read as a read-only file is read.
            let conn = open_read_only(path, wait)
                .map_err(|e| cannot_access(path, kind, &e.to_string()))?;
            return read_only_as_it_is(conn, path, schema, version);
        }
        return Err(anyhow::Error::new(e).context(format!("{name}: setting WAL")));
    }
    if !existed {
        conn.pragma_update(None, "application_id", schema.application_id)
            .with_context(|| format!("{name}: creating the {kind}"))?;
    }
    if existed && version < schema.version() {
        let size = std::fs::metadata(path).map_or(0, |m| m.len());
        if size > QUICK_CHECK_ON_OPEN_MAX_BYTES {
            // Said before it starts: a step may read every row (History counts a million
            // plans in seconds), and nothing else is said meanwhile.
            crate::fsio::notice(format!(
                "{name}: updating the {kind} ({} MB) from schema {version} to {}, once; a store \
                 this size takes seconds",
                size / (1024 * 1024),
                schema.version()
            ));
        }
    }
    if (version as usize) < schema.migrations.len()
        && let Some(note) = writer_note(&conn, path, schema, wait, "updating its schema waits", "")?
    {
        // Said before the wait, as a reader's is (tester 28 N6: a read command migrating a
        // store sat a minute in silence behind an import's write lock).
        crate::fsio::notice(note);
    }
    for (from, sql) in schema.migrations.iter().enumerate().skip(version as usize) {
        // Another process may be creating or migrating the same file: take the write lock,
        // then look again.
        let tx = begin_write_waiting(
            &mut conn,
            path,
            schema,
            &format!("migrating the {kind}"),
            wait,
        )?;
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

/// A store that cannot be written, opened for reads: as it is, when its schema is current;
/// refused, saying how to fix it, when it needs migrating (a write).
fn read_only_as_it_is(
    conn: Connection,
    path: &Path,
    schema: &Schema,
    version: i64,
) -> anyhow::Result<(Connection, bool)> {
    if version < schema.version() && opened_without_room(path) {
        return Err(anyhow::anyhow!(
            "{}: the {} needs migrating from schema {version} to {}, a write: {}; \
             nothing was changed",
            path.shown(),
            schema.kind,
            schema.version(),
            SHM_NO_ROOM
        ));
    }
    if version < schema.version() {
        return Err(anyhow::anyhow!(
            "{}: the {} is read-only (the file or its directory cannot be written) \
             and needs migrating from schema {version} to {}; make it writable once",
            path.shown(),
            schema.kind,
            schema.version()
        ));
    }
    Ok((conn, false))
}

/// Open an existing file of `schema` for reads only (`mcp --read-only`): nothing is
/// created, migrated or written, not even the setting of WAL. `None` when there is no file
/// (or only an empty one, which a writer would initialise). A file that is not ours, is
/// damaged or newer is refused as [`open`] refuses it; one that needs migrating is refused,
/// saying so: migrating is a write.
pub fn open_existing_read_only(path: &Path, schema: &Schema) -> anyhow::Result<Option<Connection>> {
    let name = path.shown().to_string();
    let kind = schema.kind;
    match std::fs::metadata(path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(cannot_access(path, kind, &e.to_string())),
        Ok(meta) if meta.is_dir() => {
            return Err(bad_input(format!(
                "{name}: is a directory, not a ctxconsole {kind}"
            )));
        }
        Ok(meta) if meta.len() == 0 => return Ok(None),
        Ok(_) => {}
    }
    fits_sqlite_path(path, kind, None)?;
    let conn = open_read_only(path, BUSY_TIMEOUT).map_err(|e| {
        if is_access_error(&e) {
            cannot_access(path, kind, &e.to_string())
        } else {
            anyhow::Error::new(e).context(format!("{name}: cannot open the {kind}"))
        }
    })?;
    let version = known_version(&conn, application_id(&conn), path, schema, BUSY_TIMEOUT)?;
    if version < schema.version() {
        return Err(bad_input(format!(
            "{name}: the {kind} needs migrating from schema {version} to {}, and --read-only \
             never writes; it was left untouched: run any ctxconsole command on it without \
             --read-only once (e.g. `ctxconsole history`)",
            schema.version()
        )));
    }
    if std::fs::metadata(path).map_or(0, |m| m.len()) <= QUICK_CHECK_ON_OPEN_MAX_BYTES {
        quick_check_once(&conn, path, &name, kind)?;
    }
    Ok(Some(conn))
}

/// The longest path, in bytes, SQLite opens a file at: its unix VFS holds a full path in
/// 512 bytes (SQLITE_MAX_PATHNAME, as bundled) and refuses a file whose path leaves no room
/// for the 8 bytes of `-journal` after it ("unable to open database file", which read as a
/// directory that is read-only or not accessible: a tester's F4). Measured:
/// `tests::sqlite_opens_a_path_of_at_most_max_path_bytes`.
pub const MAX_PATH_BYTES: usize = 504;

/// The path SQLite opens for `path`, whose length it limits: absolute, with `.`, `..` and
/// symbolic links resolved as far as the path exists.
fn sqlite_full_path(path: &Path) -> PathBuf {
    if let Ok(full) = std::fs::canonicalize(path) {
        return full;
    }
    let parent = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    match (std::fs::canonicalize(parent), path.file_name()) {
        (Ok(dir), Some(name)) => dir.join(name),
        _ => std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf()),
    }
}

/// Refuse, before anything is created or opened, a file of `kind` at `path` SQLite could not
/// open for the length of its path ([`MAX_PATH_BYTES`]), saying so: the path, its length and
/// the most SQLite takes. `new`: the file is to be made first under a name this many bytes
/// longer beside it ([`crate::fsio::temp_name_extra`]), which must fit too. The one check
/// every open of a store makes; nothing is changed by it.
fn fits_sqlite_path(path: &Path, kind: &str, new: Option<usize>) -> anyhow::Result<()> {
    let full = sqlite_full_path(path);
    let len = full.as_os_str().len();
    let extra = new.unwrap_or(0);
    if len + extra <= MAX_PATH_BYTES {
        return Ok(());
    }
    let most = MAX_PATH_BYTES.saturating_sub(extra);
    let full_words = if full.as_path() == path {
        String::new()
    } else {
        format!(" (in full {})", full.shown())
    };
    let why = match new {
        Some(extra) => format!(
            "at most {most} for a new {kind}, which is made under a name {extra} bytes longer \
             beside it first"
        ),
        None => format!("at most {most}"),
    };
    Err(bad_input(format!(
        "{}: the path is too long for SQLite to open the {kind} ({len} bytes{full_words}; \
         {why}); nothing was changed: use a shorter path",
        path.shown()
    )))
}

/// The schema version of an existing file, once its application id (`app`, as read) shows
/// it is a `schema` file this build can read: a foreign or damaged file, or one written by
/// a newer ctxconsole, is refused and left as it is.
fn known_version(
    conn: &Connection,
    app: rusqlite::Result<i64>,
    path: &Path,
    schema: &Schema,
    waited: Duration,
) -> anyhow::Result<i64> {
    let name = &*path.shown();
    let kind = schema.kind;
    let not_ours = |detail: String| {
        bad_input(format!(
            "{name}: not a ctxconsole {kind} ({detail}); it was left untouched: move it aside or point ctxconsole elsewhere"
        ))
    };
    // A full disk or an I/O error is the machine's failure, never the file's content; a
    // lock another process held for the whole wait is that process's doing (tester 22 F3).
    let unreadable = |e: &rusqlite::Error| {
        if is_busy(e) {
            return Some(locked_out(path, kind, waited));
        }
        environment_words(e).map(|words| {
            anyhow::anyhow!("{name}: cannot read the {kind}: {words} ({e}); nothing was changed")
        })
    };
    // A file whose header carries our application id but cannot be read past it lost its
    // tail or was damaged: not "not ours" (tester 31 F5: a truncated store read as a
    // stranger's file, sending the operator to look for the right one, not a backup).
    let damaged_or_not_ours = |detail: String| {
        if header_application_id(path) == Some(schema.application_id) {
            bad_input(format!(
                "{name}: the {kind} is damaged ({detail}; its header is a ctxconsole {kind}'s); it was left untouched: restore it from a backup or move it aside"
            ))
        } else {
            not_ours(detail)
        }
    };
    let app = app.map_err(|e| {
        if is_access_error(&e) {
            cannot_access(path, kind, &e.to_string())
        } else {
            unreadable(&e).unwrap_or_else(|| damaged_or_not_ours(e.to_string()))
        }
    })?;
    if app != schema.application_id {
        return Err(not_ours(format!("application id {app:#x}")));
    }
    let version: i64 = conn
        .query_row("PRAGMA user_version", [], |r| r.get(0))
        .map_err(|e| unreadable(&e).unwrap_or_else(|| not_ours(e.to_string())))?;
    if version > schema.version() {
        return Err(bad_input(format!(
            "{name}: written by a newer ctxconsole (schema {version}, this one knows {}); not touched",
            schema.version()
        )));
    }
    Ok(version)
}

/// The application id an SQLite file's header gives (4 bytes big-endian at offset 68), read
/// without SQLite: what a file too damaged to open still says of itself.
fn header_application_id(path: &Path) -> Option<i64> {
    use std::io::Read;
    // Through the id's 4 bytes: a file cut inside the rest of the header still says it
    // (tester 32 F6: one cut to 96–99 bytes was called not ours).
    let mut header = [0u8; 72];
    std::fs::File::open(path)
        .and_then(|mut f| f.read_exact(&mut header))
        .ok()?;
    if !header.starts_with(b"SQLite format 3\0") {
        return None;
    }
    let id = i32::from_be_bytes([header[68], header[69], header[70], header[71]]);
    Some(i64::from(id))
}

/// A file of `schema` in memory, made whole: for what must serve a store without creating
/// one (`mcp --read-only` where there is none). `name` stands for it in messages.
pub fn open_in_memory(schema: &Schema, name: &str) -> anyhow::Result<Connection> {
    let conn = Connection::open_in_memory()
        .with_context(|| format!("{name}: opening the {} in memory", schema.kind))?;
    conn.pragma_update(None, "application_id", schema.application_id)?;
    for (from, sql) in schema.migrations.iter().enumerate() {
        conn.execute_batch(sql)
            .and_then(|()| conn.pragma_update(None, "user_version", from as i64 + 1))
            .with_context(|| format!("{name}: making the {} in memory", schema.kind))?;
    }
    Ok(conn)
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
        let _ = std::fs::remove_file(crate::fsio::with_suffix(&tmp, leftover));
    }
    // In plain words when the machine failed (a file-size limit gives SQLite's "disk I/O
    // error: Error code 778"; tester 9 T9-4), as every other store failure is said.
    placed.map_err(|e| store_failure(e, path, &format!("creating the {}", schema.kind)))
}

/// `PRAGMA application_id`: the first read of a file.
fn application_id(conn: &Connection) -> rusqlite::Result<i64> {
    conn.query_row("PRAGMA application_id", [], |r| r.get(0))
}

/// Stored free text (a plan's intent, caller, model…) as its bytes read: bytes that are no
/// UTF-8, or a blob, put in by hand (sqlite3) — no writer of ours stores one — read with
/// U+FFFD where they fail, a number as its digits, NULL as nothing. One bad row then never
/// stops a listing, an export or a pane (tester 45 F1); what is stored is not changed, and
/// what is shown still goes through `core::terminal_text` where it is shown.
pub fn lossy_text(v: rusqlite::types::ValueRef<'_>) -> String {
    lossy_str(v).into_owned()
}

/// [`lossy_text`] borrowing the row's bytes where they are UTF-8 already: for a pass over
/// every row (the regroup reads every plan's intent so, as a listing shows it).
pub fn lossy_str(v: rusqlite::types::ValueRef<'_>) -> std::borrow::Cow<'_, str> {
    use rusqlite::types::ValueRef;
    use std::borrow::Cow;
    match v {
        ValueRef::Text(b) | ValueRef::Blob(b) => String::from_utf8_lossy(b),
        ValueRef::Integer(i) => Cow::Owned(i.to_string()),
        ValueRef::Real(f) => Cow::Owned(f.to_string()),
        ValueRef::Null => Cow::Borrowed(""),
    }
}

/// Column `i` of a row read as [`lossy_text`].
pub fn text_at(r: &rusqlite::Row<'_>, i: usize) -> rusqlite::Result<String> {
    Ok(lossy_text(r.get_ref(i)?))
}

/// Column `i` of a row read as [`lossy_text`], NULL as `None`.
pub fn opt_text_at(r: &rusqlite::Row<'_>, i: usize) -> rusqlite::Result<Option<String>> {
    let v = r.get_ref(i)?;
    Ok((!matches!(v, rusqlite::types::ValueRef::Null)).then(|| lossy_text(v)))
}

/// SQLite gave up waiting for another connection's lock ("database is locked").
pub fn is_busy(e: &rusqlite::Error) -> bool {
    matches!(
        e.sqlite_error_code(),
        Some(ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked)
    )
}

/// What a store whose lock another process held for the whole wait says: whose lock, the
/// file, how long it waited, and that nothing was changed. One sentence for every read or
/// open that meets such a lock ([`store_failure`] words the rest alike); a
/// [`LockWaitedOut`], exit 1 — the file is healthy, never to be moved aside.
fn locked_out(path: &Path, kind: &str, waited: Duration) -> anyhow::Error {
    anyhow::Error::new(LockWaitedOut(format!(
        "{} holds {} locked (waited {}): the {kind} could not be read, and nothing was \
         changed; try again once it lets go",
        lock_holder(),
        path.shown(),
        wait_words(waited)
    )))
}

/// What an open about to wait says when another connection holds the file locked so that
/// it cannot even be read (SQLite's exclusive locking mode; a WAL writer does not keep
/// readers out): "another process holds FILE locked now; waiting up to N s for it", said
/// before the wait of up to `wait`, as [`writer_note`] says a writer's (without its guess
/// at the holder: ctxconsole's own writers never keep readers out). `None` when the file
/// can be read now. The probe waits [`LOCK_NOTE_AFTER`] at most ([`probe_briefly`]) and
/// leaves the connection waiting `wait`.
pub fn reader_note(conn: &Connection, path: &Path, wait: Duration) -> Option<String> {
    let held = probe_briefly(conn, wait, |c| {
        Ok(application_id(c).err().is_some_and(|e| is_busy(&e)))
    })
    .ok()?;
    held.then(|| {
        format!(
            "{} holds {} locked now; waiting up to {} for it",
            lock_holder(),
            path.shown(),
            wait_words(wait)
        )
    })
}

/// Plain words for a failure of the machine rather than of the file's content: a full disk,
/// an I/O error. A store that meets one is healthy; it must never be called damaged.
pub fn environment_words(e: &rusqlite::Error) -> Option<&'static str> {
    match e.sqlite_error_code()? {
        ErrorCode::DiskFull => Some("no space left on the device holding it"),
        ErrorCode::SystemIoFailure => {
            Some("an I/O error from the device holding it (is it full or failing?)")
        }
        ErrorCode::OutOfMemory => Some("out of memory"),
        _ => None,
    }
}

/// A write of the store at `path` that failed once its lock was taken, and was rolled back:
/// one line, the cause first, then the outcome: "FILE: DOING: CAUSE; nothing was changed"
/// (review 47 L5). The cause in plain words when the machine failed; a full disk is said
/// as possibly SQLite's temporary directory ([`temp_dir`]), which a large write fills too,
/// not only the device holding the store (review 47 H1). A bad-input error stays one.
pub fn undone_failure(e: anyhow::Error, path: &Path, doing: &str) -> anyhow::Error {
    let sqlite = e.chain().find_map(|c| c.downcast_ref::<rusqlite::Error>());
    let cause = match sqlite {
        Some(s) if s.sqlite_error_code() == Some(ErrorCode::DiskFull) => {
            format!("{} ({s})", no_space_words())
        }
        Some(s) => environment_words(s)
            .map(|w| format!("{w} ({s})"))
            .or_else(|| sidecar_words(s, path))
            .unwrap_or_else(|| crate::exit::said(&e)),
        None => crate::exit::said(&e),
    };
    let said = format!("{}: {doing}: {cause}; nothing was changed", path.shown());
    if crate::exit::code_for(&e) == crate::exit::BAD_INPUT {
        crate::exit::bad_input(said)
    } else {
        anyhow::anyhow!(said)
    }
}

/// Whether `e` is SQLite's "database or disk is full" (SQLITE_FULL): no room to write.
pub fn is_disk_full(e: &anyhow::Error) -> bool {
    e.chain()
        .filter_map(|c| c.downcast_ref::<rusqlite::Error>())
        .any(|s| s.sqlite_error_code() == Some(ErrorCode::DiskFull))
}

/// A full disk as a write of a store says it: the device holding the store ("it"), or
/// SQLite's temporary directory ([`temp_dir`]), which a large write fills too (review 47 H1).
pub fn no_space_words() -> String {
    format!(
        "no space left on the device holding it or for SQLite's temporary files {}",
        temp_dir_words()
    )
}

/// Where SQLite puts its temporary files (a statement journal, a sort, a temporary table)
/// on this machine: its unix VFS takes the first of SQLITE_TMPDIR, TMPDIR, /var/tmp,
/// /usr/tmp, /tmp and the working directory that is a directory it may write (ctxconsole
/// sets no `temp_store_directory`). `None` where none is.
#[cfg(unix)]
pub fn temp_dir() -> Option<PathBuf> {
    let env = |k: &str| std::env::var_os(k).map(PathBuf::from);
    [
        env("SQLITE_TMPDIR"),
        env("TMPDIR"),
        Some(PathBuf::from("/var/tmp")),
        Some(PathBuf::from("/usr/tmp")),
        Some(PathBuf::from("/tmp")),
        Some(PathBuf::from(".")),
    ]
    .into_iter()
    .flatten()
    .find(|d| std::fs::metadata(d).is_ok_and(|m| m.is_dir() && !m.permissions().readonly()))
}

/// [`temp_dir`] as an error says it.
fn temp_dir_words() -> String {
    #[cfg(unix)]
    if let Some(d) = temp_dir() {
        return format!("in {}, which SQLITE_TMPDIR moves", d.shown());
    }
    "in the system's temporary directory".to_string()
}

/// An error from SQLite reading or writing the file at `path` as one line that names the
/// file and what was being done (unless it already does), in plain words when the machine,
/// not the file, failed. Any other error (a bad input line, say) is returned as it is.
pub fn store_failure(e: anyhow::Error, path: &Path, doing: &str) -> anyhow::Error {
    let Some(sqlite) = e.chain().find_map(|c| c.downcast_ref::<rusqlite::Error>()) else {
        return e;
    };
    // The machine's failure, a -wal or -shm beside the file that refuses it, or another
    // process's lock held for the whole wait.
    let words = environment_words(sqlite)
        .map(str::to_string)
        .or_else(|| sidecar_words(sqlite, path))
        .or_else(|| {
            is_busy(sqlite).then(|| {
                format!(
                    "{} held it locked for the whole wait; nothing was changed: try again once \
                     it lets go",
                    lock_holder()
                )
            })
        });
    let name = path.shown().to_string();
    let said = crate::exit::said(&e);
    if said.contains(&name) {
        return match words {
            Some(w) if !said.contains(&w) => e.context(format!("{name}: {w}")),
            _ => e,
        };
    }
    e.context(match words {
        Some(w) => format!("{name}: {doing}: {w}"),
        None => format!("{name}: {doing}"),
    })
}

/// SQLite could not open, lock or create what it needed: permissions, not content.
fn is_access_error(e: &rusqlite::Error) -> bool {
    matches!(
        e.sqlite_error_code(),
        Some(ErrorCode::CannotOpen | ErrorCode::ReadOnly | ErrorCode::PermissionDenied)
    )
}

/// SQLite could not make or grow the -shm beside a file in WAL mode, which every read of it
/// needs: its unix VFS says SQLITE_IOERR_SHMSIZE when the write that extends the -shm to
/// 32 KiB fails, whatever the cause (ENOSPC on a full disk, EFBIG past a file-size limit),
/// and SQLITE_IOERR_SHMOPEN when it cannot truncate it; SQLITE_FULL is a full disk said as
/// such. Measured: `history_cli`'s `a_store_whose_shm_the_device_cannot_take_is_read_as_it_is`.
fn shm_refused(e: &rusqlite::Error) -> bool {
    e.sqlite_error().is_some_and(|s| {
        s.code == ErrorCode::DiskFull
            || matches!(
                s.extended_code,
                rusqlite::ffi::SQLITE_IOERR_SHMSIZE | rusqlite::ffi::SQLITE_IOERR_SHMOPEN
            )
    })
}

/// Whether a -wal beside `path` holds anything: commits the file may lack, which a read of
/// the file alone (immutable, [`open_read_only`]) would miss.
fn wal_holds_commits(path: &Path) -> bool {
    std::fs::metadata(crate::fsio::with_suffix(path, "-wal")).is_ok_and(|m| m.len() > 0)
}

/// Why a store was read as it is when its -shm could not be made ([`shm_refused`]): the
/// full-disk words of [`environment_words`], and the file SQLite needed.
pub const SHM_NO_ROOM: &str = "no space left on the device holding it for the -shm file (32 KiB) \
                               SQLite needs beside it";

/// Files this process last opened read-only, as they are, because their -shm could not be
/// made ([`shm_refused`]; by canonical path, as [`CHECKED`]): a write through such a
/// connection says so ([`ensure_writable`]), not that the file is read-only.
static WITHOUT_ROOM: Mutex<BTreeSet<PathBuf>> = Mutex::new(BTreeSet::new());

/// Mark (`without_room`) or unmark the file at `path` as read as it is for want of room
/// ([`WITHOUT_ROOM`]): each open of it says anew.
fn read_without_room(path: &Path, without_room: bool) {
    let key = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
    if let Ok(mut set) = WITHOUT_ROOM.lock() {
        if without_room {
            set.insert(key);
        } else {
            set.remove(&key);
        }
    }
}

/// Whether the last open of the file at `path` in this process read it as it is for want of
/// room for its -shm ([`WITHOUT_ROOM`]).
pub fn opened_without_room(path: &Path) -> bool {
    let key = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
    WITHOUT_ROOM.lock().is_ok_and(|set| set.contains(&key))
}

/// Remove the -shm (a few bytes) and the empty -wal that an open which could not grow the
/// -shm left beside `path` (review 49 L4), as the last connection to close removes them:
/// only while no other connection, of any process, has the file open in WAL mode. That is
/// known as SQLite's own close knows it: such a connection keeps a shared lock on the file,
/// and this one takes the exclusive lock (locking mode EXCLUSIVE, which also keeps the
/// wal-index in memory, so no -shm is touched), not waiting for it. Nothing is written to
/// the file: the close skips its checkpoint, and a -wal that holds anything is kept (the
/// next open rebuilds a -shm from it). Best effort: whatever fails leaves the files, which
/// the next open with room reuses.
fn remove_unused_sidecars(path: &Path) {
    let Ok(conn) = Connection::open_with_flags(path, OpenFlags::SQLITE_OPEN_READ_WRITE) else {
        return;
    };
    let alone = conn.busy_timeout(Duration::ZERO).is_ok()
        && conn
            .set_db_config(
                rusqlite::config::DbConfig::SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE,
                true,
            )
            .is_ok_and(|set| set)
        && conn
            .query_row("PRAGMA locking_mode = EXCLUSIVE", [], |r| {
                r.get::<_, String>(0)
            })
            .is_ok_and(|mode| mode == "exclusive")
        // The first read takes the exclusive lock.
        && application_id(&conn).is_ok();
    if alone {
        let _ = std::fs::remove_file(crate::fsio::with_suffix(path, "-shm"));
        if !wal_holds_commits(path) {
            let _ = std::fs::remove_file(crate::fsio::with_suffix(path, "-wal"));
        }
    }
    drop(conn);
}

/// The file at `path` could not be read: said as the file or its directory being read-only
/// or not accessible — or, when the file is writable and a -wal or -shm beside it is what
/// refuses, as that file and the chmod that fixes it ([`unwritable_sidecar`]).
fn cannot_access(path: &Path, kind: &str, detail: &str) -> anyhow::Error {
    let name = path.shown();
    match unwritable_sidecar(path) {
        Some(words) => anyhow::anyhow!("{name}: cannot read the {kind}: {words} ({detail})"),
        None => anyhow::anyhow!(
            "{name}: cannot read the {kind}: the file or its directory is read-only or not accessible ({detail})"
        ),
    }
}

/// When the file at `path` can be written but a -wal or -shm beside it cannot (a -shm left
/// 0400 by an older ctxconsole's run on a store made read-only — tester 21 F6 — or one another
/// user made): that file, and what makes it writable. SQLite then refuses every write lock
/// with its bare "attempt to write a readonly database", naming neither. `None` when the file
/// itself is read-only (its own mode is the first fix) or nothing beside it is.
pub fn unwritable_sidecar(path: &Path) -> Option<String> {
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    let refused = |p: &Path| {
        matches!(
            std::fs::OpenOptions::new().write(true).open(p),
            Err(e) if e.kind() == std::io::ErrorKind::PermissionDenied
        )
    };
    let store = std::fs::symlink_metadata(path).ok()?;
    if !store.is_file() || store.permissions().mode() & 0o200 == 0 || refused(path) {
        return None;
    }
    SIDECARS.iter().find_map(|suffix| {
        let file = crate::fsio::with_suffix(path, suffix);
        let meta = std::fs::symlink_metadata(&file).ok()?;
        if meta.file_type().is_symlink() {
            // SQLite opens its -wal and -shm without following links (tester 21 F7: such a
            // link read as "read-only or not accessible", sending the operator to chmod).
            return Some(format!(
                "{} beside it is a symbolic link, which SQLite never opens as the store's {suffix} \
                 file (its target is left untouched): remove the link",
                file.shown()
            ));
        }
        let mode = meta.permissions().mode() & 0o777;
        if !meta.is_file() || (mode & 0o200 != 0 && !refused(&file)) {
            return None;
        }
        let word = crate::fsio::shell_word(&file);
        Some(if meta.uid() == store.uid() {
            format!(
                "{} beside it cannot be written (mode {mode:04o}), so nothing can be stored: \
                 run `chmod 600 {word}`",
                file.shown()
            )
        } else {
            format!(
                "{} beside it cannot be written (mode {mode:04o}, owned by uid {}, the file by \
                 uid {}), so nothing can be stored: run `chmod 600 {word}` as its owner, or \
                 remove it while no ctxconsole has {} open",
                file.shown(),
                meta.uid(),
                store.uid(),
                path.shown()
            )
        })
    })
}

/// [`unwritable_sidecar`]'s words for `e` when SQLite refused access (a read-only -shm
/// makes it refuse the write lock); `None` for any other error.
pub fn sidecar_words(e: &rusqlite::Error, path: &Path) -> Option<String> {
    is_access_error(e)
        .then(|| unwritable_sidecar(path))
        .flatten()
}

/// Open an existing file for reads only, when its directory cannot take the -wal and -shm
/// files. With no -wal file left beside it, no transaction is half-written, so the file is
/// opened immutable (SQLite then needs no -shm); a -wal left behind must be read through.
fn open_read_only(path: &Path, wait: Duration) -> rusqlite::Result<Connection> {
    let wal = crate::fsio::with_suffix(path, "-wal");
    let conn = if std::fs::metadata(&wal).is_ok_and(|m| m.len() > 0) {
        Connection::open_with_flags(path, OpenFlags::SQLITE_OPEN_READ_ONLY)?
    } else {
        let absolute = std::path::absolute(path).map_err(|e| {
            rusqlite::Error::SqliteFailure(
                rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_CANTOPEN),
                Some(e.to_string()),
            )
        })?;
        Connection::open_with_flags(
            format!("file:{}?immutable=1", uri_path(&absolute)),
            OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_URI,
        )?
    };
    conn.busy_timeout(wait)?;
    Ok(conn)
}

/// A path as the path of a `file:` URI: every byte but unreserved ones and `/` escaped.
fn uri_path(path: &Path) -> String {
    let mut out = String::new();
    for b in path.as_os_str().as_encoded_bytes() {
        if b.is_ascii_alphanumeric() || b"/-._~".contains(b) {
            out.push(*b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// Up to this size a file is checked when it is opened, whatever the command does: the
/// check reads the whole file (measured 0.3 s for a 130 MB store of 100,000 plans, 4 s for
/// 1.2 GB and 1,000,000 plans, against 0.3–0.5 s for the whole `history` command). A larger
/// file is checked before its first write, where damage would spread; a read that meets a
/// damaged page fails on it, naming the file.
pub const QUICK_CHECK_ON_OPEN_MAX_BYTES: u64 = 128 * 1024 * 1024;

/// Files this process has already checked (by canonical path): the check reads the whole
/// file, and the console opens a connection per query.
static CHECKED: Mutex<BTreeSet<PathBuf>> = Mutex::new(BTreeSet::new());

/// `PRAGMA quick_check` the first time this process opens a file: a damaged page anywhere
/// is refused before anything reads or writes around it. Reads only.
fn quick_check_once(conn: &Connection, path: &Path, name: &str, kind: &str) -> anyhow::Result<()> {
    let key = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
    if CHECKED.lock().is_ok_and(|c| c.contains(&key)) {
        return Ok(());
    }
    // SQLite's own report spans lines (`*** in database main ***` then a line per page):
    // said on one line, as every error is (tester 26 N12).
    let damaged = |detail: &str| {
        let lines: Vec<&str> = detail
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty())
            .collect();
        let detail = crate::core::terminal_text::one_line(&lines.join("; "), 400);
        bad_input(format!(
            "{name}: the {kind} is damaged ({detail}); it was left untouched: restore it from a \
             backup or move it aside"
        ))
    };
    let problems: Vec<String> = conn
        .prepare("PRAGMA quick_check(5)")
        .and_then(|mut st| st.query_map([], |r| r.get(0))?.collect())
        .map_err(|e| {
            if is_access_error(&e) {
                cannot_access(path, kind, &e.to_string())
            } else if is_busy(&e) {
                // Another process's lock, not damage (tester 22 F3).
                let waited = lock_wait(conn).unwrap_or(BUSY_TIMEOUT);
                locked_out(path, kind, waited)
            } else {
                damaged(&e.to_string())
            }
        })?;
    if problems != ["ok"] {
        return Err(damaged(&problems.join("; ")));
    }
    if let Ok(mut c) = CHECKED.lock() {
        c.insert(key);
    }
    Ok(())
}

/// Rewrite the file without its free pages (VACUUM) and empty its write-ahead log: the
/// space deleted rows took goes back to the file system, and no byte of them is left in
/// either file (`cache gc`, `ctxconsole scrub`).
pub fn rewrite_whole(conn: &Connection) -> rusqlite::Result<()> {
    conn.execute_batch("VACUUM; PRAGMA wal_checkpoint(TRUNCATE);")
}

/// Before any write: refuse a file opened read-only, saying so, before SQLite would; and
/// check the file once (a write into a damaged file spreads the damage).
pub fn ensure_writable(
    conn: &Connection,
    path: &Path,
    kind: &str,
    doing: &str,
) -> anyhow::Result<()> {
    let name = path.shown().to_string();
    if conn.is_readonly(MAIN_DB)? {
        if opened_without_room(path) {
            anyhow::bail!(
                "{name}: the {kind} cannot be written: {SHM_NO_ROOM}; {doing} needs to write it; \
                 nothing was changed"
            );
        }
        if let Some(words) = unwritable_sidecar(path) {
            anyhow::bail!(
                "{name}: the {kind} cannot be written: {words}; {doing} needs to write it"
            );
        }
        anyhow::bail!(
            "{name}: the {kind} is read-only (the file or its directory cannot be written): {doing} needs to write it"
        );
    }
    quick_check_once(conn, path, &name, kind)
}

/// Whether another connection holds the write lock now, and not only for an instant: the
/// lock is tried, waiting [`LOCK_NOTE_AFTER`] at most ([`probe_briefly`]), and let go at
/// once. A command about to pay for answers says so before it sends, since storing them will
/// wait for that writer. The connection's own wait (`wait`: [`BUSY_TIMEOUT`], or what
/// [`set_lock_wait`] gave it) is put back after.
pub fn write_lock_held_elsewhere(conn: &Connection, wait: Duration) -> rusqlite::Result<bool> {
    probe_briefly(conn, wait, |c| match c.execute_batch("BEGIN IMMEDIATE") {
        Ok(()) => c.execute_batch("ROLLBACK").map(|()| false),
        Err(e) if is_busy(&e) => Ok(true),
        Err(e) => Err(e),
    })
}

/// How long a lock must stay held before a probe calls it held ([`probe_briefly`]). Another
/// connection takes the file's lock for an instant in its ordinary course: the last one to
/// close checkpoints the -wal and removes it under an exclusive lock, and a write commits in
/// milliseconds. A probe that waited for nothing met such an instant and said "another call
/// of this server or another process holds FILE locked now; waiting up to 60 s" on a server
/// whose own read-only calls were all that touched the store (a tester's F1: 4 runs in 5 of
/// 300 `rank_tools` calls). A lock still held after this is one worth saying before the wait.
pub const LOCK_NOTE_AFTER: Duration = Duration::from_millis(250);

/// Run `probe` (a read or a try of the write lock that says whether it met another
/// connection's lock) with the connection waiting [`LOCK_NOTE_AFTER`] for a lock, not its
/// full wait, then put `wait` back, whatever the probe gave. The one way every note said
/// before a wait ([`reader_note`], [`writer_note`]) looks at the lock.
fn probe_briefly<T>(
    conn: &Connection,
    wait: Duration,
    probe: impl FnOnce(&Connection) -> rusqlite::Result<T>,
) -> rusqlite::Result<T> {
    conn.busy_timeout(LOCK_NOTE_AFTER.min(wait))?;
    let seen = probe(conn);
    conn.busy_timeout(wait)?;
    seen
}

/// [`write_lock_held_elsewhere`] for the store at `path`, an error worded as every other
/// probe or take of the write lock words it ([`access_failure`]: the file beside it that
/// refused, else the file and "probing the write lock"; review 45 L7).
pub fn probe_write_lock(conn: &Connection, path: &Path, wait: Duration) -> anyhow::Result<bool> {
    write_lock_held_elsewhere(conn, wait)
        .map_err(|e| access_failure(e, path, "probing the write lock"))
}

/// What a writer about to wait says when another connection holds the write lock now (see
/// [`write_lock_held_elsewhere`]): "another process is writing FILE now (LONG_WRITER);
/// {waits} up to N s for it{tail}", so a wait of up to `wait` is said before it starts rather
/// than sat through in silence (tester 11 T11-10, tester 16 F4); `None` when the lock is
/// free. The one sentence every store's writers share.
pub fn writer_note(
    conn: &Connection,
    path: &Path,
    schema: &Schema,
    wait: Duration,
    waits: &str,
    tail: &str,
) -> anyhow::Result<Option<String>> {
    let held = probe_write_lock(conn, path, wait)?;
    Ok(held.then(|| {
        format!(
            "{} is writing {} now ({}); {waits} up to {} for it{tail}",
            lock_holder(),
            path.shown(),
            schema.long_writer,
            wait_words(wait)
        )
    }))
}

/// Switch to WAL unless already there. The switch needs the file to itself and SQLite does
/// not wait for that on its own, so a first run racing another process retries briefly.
fn set_wal(conn: &Connection, wait: Duration) -> rusqlite::Result<()> {
    let deadline = std::time::Instant::now() + wait;
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
            long_writer: "a test?",
            migrations,
        }
    }

    /// Review 49 L4: what counts as no room for the -shm a WAL read needs. SQLite's unix
    /// VFS says SQLITE_IOERR_SHMSIZE for any failed write extending it (ENOSPC, EFBIG) and
    /// SQLITE_IOERR_SHMOPEN for a failed truncation; another I/O error is not counted.
    #[test]
    fn no_room_for_the_shm_is_told_from_other_io_errors() {
        let err = |code| rusqlite::Error::SqliteFailure(rusqlite::ffi::Error::new(code), None);
        for code in [
            rusqlite::ffi::SQLITE_IOERR_SHMSIZE,
            rusqlite::ffi::SQLITE_IOERR_SHMOPEN,
            rusqlite::ffi::SQLITE_FULL,
        ] {
            assert!(shm_refused(&err(code)), "{code}");
        }
        for code in [
            rusqlite::ffi::SQLITE_IOERR,
            rusqlite::ffi::SQLITE_IOERR_READ,
            rusqlite::ffi::SQLITE_IOERR_SHMMAP,
            rusqlite::ffi::SQLITE_CANTOPEN,
            rusqlite::ffi::SQLITE_BUSY,
        ] {
            assert!(!shm_refused(&err(code)), "{code}");
        }
    }

    /// Review 49 L4: the -shm and empty -wal an open that could not grow the -shm left are
    /// removed as the last connection's close removes them: not while another connection
    /// has the file open (its -shm is in use), nor a -wal that holds commits; the file's
    /// bytes never change.
    #[test]
    fn stray_sidecars_are_removed_only_when_no_connection_uses_them() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.sqlite");
        let (conn, _) = open(&path, &schema(V1)).unwrap();
        conn.execute("INSERT INTO a (x) VALUES (1)", []).unwrap();
        drop(conn);
        let shm = crate::fsio::with_suffix(&path, "-shm");
        let wal = crate::fsio::with_suffix(&path, "-wal");
        assert!(!shm.exists() && !wal.exists());
        let bytes = std::fs::read(&path).unwrap();

        // Another connection holds the file open: its -wal and -shm are left.
        let other = Connection::open(&path).unwrap();
        other
            .query_row("SELECT COUNT(*) FROM a", [], |r| r.get::<_, i64>(0))
            .unwrap();
        remove_unused_sidecars(&path);
        assert!(shm.exists() && wal.exists());
        other
            .query_row("SELECT COUNT(*) FROM a", [], |r| r.get::<_, i64>(0))
            .unwrap();
        drop(other);
        assert!(!shm.exists() && !wal.exists());

        // What a failed open leaves (a 3-byte -shm and an empty -wal), no one holding it.
        std::fs::write(&shm, b"\0\0\0").unwrap();
        std::fs::write(&wal, b"").unwrap();
        remove_unused_sidecars(&path);
        assert!(!shm.exists() && !wal.exists());
        assert_eq!(std::fs::read(&path).unwrap(), bytes);

        // A -wal that holds a commit is kept, with nothing written; the -shm goes.
        let writer = Connection::open(&path).unwrap();
        writer.pragma_update(None, "wal_autocheckpoint", 0).unwrap();
        writer.execute("INSERT INTO a (x) VALUES (2)", []).unwrap();
        let copy = dir.path().join("c.sqlite");
        std::fs::copy(&path, &copy).unwrap();
        std::fs::copy(&wal, crate::fsio::with_suffix(&copy, "-wal")).unwrap();
        drop(writer);
        let copy_wal = std::fs::read(crate::fsio::with_suffix(&copy, "-wal")).unwrap();
        std::fs::write(crate::fsio::with_suffix(&copy, "-shm"), b"\0\0\0").unwrap();
        let copy_bytes = std::fs::read(&copy).unwrap();
        remove_unused_sidecars(&copy);
        assert_eq!(
            std::fs::read(crate::fsio::with_suffix(&copy, "-wal")).unwrap(),
            copy_wal
        );
        assert!(!crate::fsio::with_suffix(&copy, "-shm").exists());
        assert_eq!(std::fs::read(&copy).unwrap(), copy_bytes);
        // Read through the -wal again, its commit there.
        let reader = Connection::open(&copy).unwrap();
        let n: i64 = reader
            .query_row("SELECT COUNT(*) FROM a", [], |r| r.get(0))
            .unwrap();
        assert_eq!(n, 2);
    }

    /// Tester 14 F9: an empty file a store is created in (made with `touch`, 0644) was
    /// filled and left readable by others; it is made private first, as a file ctxconsole
    /// creates is. A store that already holds data keeps its mode (reported, not changed).
    #[test]
    fn an_empty_file_a_store_is_created_in_is_made_private() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.sqlite");
        std::fs::write(&path, b"").unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
        let (conn, _) = open(&path, &schema(V1)).unwrap();
        drop(conn);
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&path), 0o600);
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
        let (conn, _) = open(&path, &schema(V1)).unwrap();
        drop(conn);
        assert_eq!(
            mode(&path),
            0o644,
            "a store with data is the operator's to chmod"
        );
    }

    /// Tester 21 F6: SQLite gives the -wal and -shm it makes the store's mode, so a run on a
    /// store made read-only (0400) left a 0400 -shm that refused every write once the store
    /// was writable again. Those a run makes are 0600, whatever the store's mode.
    #[test]
    fn the_wal_and_shm_a_run_makes_are_private_whatever_the_stores_mode() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.sqlite");
        drop(open(&path, &schema(V1)).unwrap());
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o400)).unwrap();
        // Held open, so SQLite leaves its files beside the store.
        let (conn, _) = open(&path, &schema(V1)).unwrap();
        for suffix in SIDECARS {
            let file = crate::fsio::with_suffix(&path, suffix);
            assert_eq!(mode(&file), 0o600, "{}", file.display());
        }
        drop(conn);
        assert_eq!(mode(&path), 0o400, "the store's own mode is the operator's");
    }

    /// Tester 21 F6: a -shm beside a writable store that cannot be written (left 0400 by an
    /// older version) made SQLite refuse the write lock in its own words ("probing the write
    /// lock: attempt to write a readonly database"). The shared wording names that file and
    /// the chmod that fixes it; nothing is said of it while the store itself is read-only.
    /// (Root writes a 0400 file, so a test run as root can check the words, not the refusal.)
    #[test]
    fn a_read_only_shm_is_named_with_the_chmod_that_fixes_it() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.sqlite");
        drop(open(&path, &schema(V1)).unwrap());
        let shm = crate::fsio::with_suffix(&path, "-shm");
        std::fs::write(&shm, b"").unwrap();
        std::fs::set_permissions(&shm, std::fs::Permissions::from_mode(0o400)).unwrap();
        let refused = || {
            rusqlite::Error::SqliteFailure(
                rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_READONLY),
                Some("attempt to write a readonly database".into()),
            )
        };
        let expected = format!(
            "{} beside it cannot be written (mode 0400), so nothing can be stored: run `chmod \
             600 {}`",
            shm.display(),
            shm.display()
        );
        assert_eq!(sidecar_words(&refused(), &path), Some(expected.clone()));
        let said = format!(
            "{:#}",
            store_failure(
                anyhow::Error::new(refused()),
                &path,
                "storing the sent plan"
            )
        );
        assert!(
            said.starts_with(&format!(
                "{}: storing the sent plan: {expected}: attempt to write a readonly database",
                path.display()
            )),
            "{said}"
        );
        let said = format!(
            "{:#}",
            access_failure(refused(), &path, "probing the write lock")
        );
        assert!(
            said.starts_with(&format!(
                "{}: probing the write lock: {expected} (",
                path.display()
            )),
            "{said}"
        );
        // Another failure, or a store that is itself read-only: not the -shm's doing.
        let full = rusqlite::Error::SqliteFailure(
            rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_FULL),
            None,
        );
        assert_eq!(sidecar_words(&full, &path), None);
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o400)).unwrap();
        assert_eq!(sidecar_words(&refused(), &path), None);
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
        std::fs::set_permissions(&shm, std::fs::Permissions::from_mode(0o600)).unwrap();
        assert_eq!(sidecar_words(&refused(), &path), None);
    }

    /// Tester 6 F4: a writer that waited out the busy timeout on another process's write
    /// lock said SQLite's "database is locked: Error code 5". Now one line names what
    /// waited, the file and the bound, and says nothing was stored.
    #[test]
    fn a_write_lock_held_past_the_wait_is_said_in_one_line() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.sqlite");
        let (mut holder, _) = open(&path, &schema(V1)).unwrap();
        let (mut waiter, _) = open(&path, &schema(V1)).unwrap();
        let waited = Schema {
            long_writer: "an import?",
            ..schema(V1)
        };
        let held = begin_write(&mut holder, &path, &waited, "importing plans").unwrap();
        // The bound is BUSY_TIMEOUT; a test need not wait a minute to meet it.
        waiter.busy_timeout(Duration::from_millis(50)).unwrap();
        let refused = begin_write(&mut waiter, &path, &waited, "storing the sent plan")
            .unwrap_err()
            .context("storing answer 1");
        // Known as a lock waited out through any context (a send's other answers are then
        // not tried: tester 12 T12-7); another failure is not one.
        assert!(waited_out_for_the_lock(&refused));
        assert!(!waited_out_for_the_lock(&anyhow::anyhow!("disk full")));
        let err = format!("{:#}", refused.root_cause());
        assert_eq!(
            err,
            format!(
                "storing the sent plan: another process held the write lock of {} for {} s \
                 (an import?); nothing was stored",
                path.display(),
                BUSY_TIMEOUT.as_secs()
            )
        );
        drop(held);
        assert!(begin_write(&mut waiter, &path, &waited, "storing the sent plan").is_ok());
    }

    /// Hold `path` the way another process in SQLite's exclusive locking mode does: no
    /// other connection can even read it until the holder is dropped.
    fn hold_exclusively(path: &Path) -> Connection {
        let holder = Connection::open(path).unwrap();
        holder
            .execute_batch("PRAGMA locking_mode=exclusive; BEGIN EXCLUSIVE;")
            .unwrap();
        let _: i64 = holder
            .query_row("SELECT count(*) FROM sqlite_master", [], |r| r.get(0))
            .unwrap();
        holder
    }

    /// Tester 22 F3: a store another process held in exclusive locking mode was waited for
    /// a minute in silence, then called "not a ctxconsole history store (database is
    /// locked) … move it aside" (exit 2). The wait is said before it starts, its end names
    /// the lock, the file and the wait (exit 1), and the file is left as it was.
    #[test]
    fn a_file_another_process_holds_locked_is_said_so_never_not_ours() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.sqlite");
        let (conn, _) = open(&path, &schema(V1)).unwrap();
        conn.execute("INSERT INTO a(x) VALUES (1)", []).unwrap();
        drop(conn);
        let before = std::fs::read(&path).unwrap();
        let holder = hold_exclusively(&path);
        let wait = Duration::from_millis(200);
        // Said before the wait, without waiting.
        let prober = Connection::open(&path).unwrap();
        let started = std::time::Instant::now();
        assert_eq!(
            reader_note(&prober, &path, BUSY_TIMEOUT),
            Some(format!(
                "another process holds {} locked now; waiting up to 60 s for it",
                path.display()
            ))
        );
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "it did not wait"
        );
        assert_eq!(
            lock_wait(&prober).unwrap(),
            BUSY_TIMEOUT,
            "the wait is put back"
        );
        let err = open_waiting(&path, &schema(V1), wait).err().unwrap();
        let said = format!("{err:#}");
        assert_eq!(
            said,
            format!(
                "another process holds {} locked (waited 200 ms): the test file could not be \
                 read, and nothing was changed; try again once it lets go",
                path.display()
            )
        );
        assert!(!said.contains("not a ctxconsole"), "{said}");
        assert_eq!(crate::exit::code_for(&err), crate::exit::RUNTIME);
        assert!(waited_out_for_the_lock(&err));
        // A read that meets the lock later is worded alike through store_failure.
        let busy = rusqlite::Error::SqliteFailure(
            rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_BUSY),
            Some("database is locked".into()),
        );
        let later = format!(
            "{:#}",
            store_failure(anyhow::Error::new(busy), &path, "reading plans")
        );
        assert!(
            later.starts_with(&format!(
                "{}: reading plans: another process held it locked for the whole wait; \
                 nothing was changed",
                path.display()
            )),
            "{later}"
        );
        drop(holder);
        assert_eq!(std::fs::read(&path).unwrap(), before, "left untouched");
        assert_eq!(reader_note(&prober, &path, wait), None);
        assert!(open_waiting(&path, &schema(V1), wait).is_ok());
    }

    /// The probe sees another connection's write lock without waiting for it, takes
    /// nothing, and leaves the connection waiting the full bound again.
    /// Review 47 L5: a write that failed once its lock was taken says the cause first, then
    /// "; nothing was changed"; a full disk names SQLite's temporary directory too (a large
    /// write's temporary files fill it, not only the store's device: H1); this connection's
    /// own SQLITE_LOCKED is said as it is, never taken for another's lock (L1); a bad-input
    /// error keeps its exit code.
    #[test]
    fn a_failed_write_says_its_cause_then_that_nothing_was_changed() {
        let path = Path::new("/data/history.sqlite");
        let doing = "grouping plans by today's word rules";
        let full = rusqlite::Error::SqliteFailure(
            rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_FULL),
            Some("database or disk is full".to_string()),
        );
        let said = format!(
            "{:#}",
            undone_failure(anyhow::Error::new(full).context("moving"), path, doing)
        );
        let temp = temp_dir().expect("a temporary directory");
        assert_eq!(
            said,
            format!(
                "{}: {doing}: no space left on the device holding it or for SQLite's \
                 temporary files in {}, which SQLITE_TMPDIR moves (database or disk is full); \
                 nothing was changed",
                path.display(),
                temp.display()
            )
        );
        // This connection's own table lock: a DROP while its own read still steps.
        let conn = Connection::open_in_memory().unwrap();
        conn.execute_batch("CREATE TABLE t(x); INSERT INTO t VALUES (1), (2);")
            .unwrap();
        let mut read = conn.prepare("SELECT x FROM t").unwrap();
        let mut rows = read.query([]).unwrap();
        rows.next().unwrap();
        let own = conn.execute_batch("DROP TABLE t").unwrap_err();
        assert_eq!(own.sqlite_error_code(), Some(ErrorCode::DatabaseLocked));
        let own = anyhow::Error::new(own);
        assert!(!waited_out_for_the_lock(&own));
        let said = format!("{:#}", undone_failure(own, path, doing));
        assert!(
            said.starts_with(&format!("{}: {doing}: ", path.display()))
                && said.contains("locked")
                && said.ends_with("; nothing was changed"),
            "{said}"
        );
        drop(rows);
        let bad = undone_failure(bad_input("a stored outcome 'x' is none"), path, doing);
        assert_eq!(crate::exit::code_for(&bad), crate::exit::BAD_INPUT);
        assert_eq!(
            bad.to_string(),
            format!(
                "{}: {doing}: a stored outcome 'x' is none; nothing was changed",
                path.display()
            )
        );
    }

    /// A tester's F1: `ctxconsole mcp` said "another call of this server or another process
    /// holds FILE locked now; waiting up to 60 s" for its own read-only calls, nothing else
    /// touching the store: the probe waited for nothing and met the instant another
    /// connection of the process closed (the last one checkpoints the -wal under an
    /// exclusive lock). Connections opened and closed beside the probe, as the server's
    /// calls do, are never said as a lock held.
    #[test]
    fn connections_opening_and_closing_beside_a_probe_are_not_a_lock_held() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.sqlite");
        drop(open(&path, &schema(V1)).unwrap());
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let churn: Vec<_> = (0..3)
            .map(|_| {
                let (path, stop) = (path.clone(), std::sync::Arc::clone(&stop));
                std::thread::spawn(move || {
                    while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                        let conn = Connection::open(&path).unwrap();
                        let _: i64 = conn
                            .query_row("SELECT count(*) FROM a", [], |r| r.get(0))
                            .unwrap();
                    }
                })
            })
            .collect();
        let mut said = Vec::new();
        for _ in 0..400 {
            let prober = Connection::open(&path).unwrap();
            said.extend(reader_note(&prober, &path, BUSY_TIMEOUT));
            if write_lock_held_elsewhere(&prober, BUSY_TIMEOUT).unwrap() {
                said.push("the write lock".to_string());
            }
        }
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        for t in churn {
            t.join().unwrap();
        }
        assert!(
            said.is_empty(),
            "{} of 400 probes said a lock held, the first: {:?}",
            said.len(),
            said.first()
        );
    }

    /// A lock another connection lets go of within [`LOCK_NOTE_AFTER`] is not said; one it
    /// keeps is, after that wait and not the connection's own.
    #[test]
    fn a_lock_held_for_an_instant_is_not_said_one_kept_is() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.sqlite");
        drop(open(&path, &schema(V1)).unwrap());
        let let_go_after = |holder: Connection, after: Duration| {
            std::thread::spawn(move || {
                std::thread::sleep(after);
                drop(holder);
            })
        };
        // Read: a holder in exclusive locking mode (which no other connection may have the
        // file open for) for 50 ms.
        let holder = hold_exclusively(&path);
        let prober = Connection::open(&path).unwrap();
        let holder = let_go_after(holder, Duration::from_millis(50));
        assert_eq!(reader_note(&prober, &path, BUSY_TIMEOUT), None);
        holder.join().unwrap();
        // Write: a writer's transaction for 50 ms.
        let (writer, _) = open(&path, &schema(V1)).unwrap();
        writer.execute_batch("BEGIN IMMEDIATE").unwrap();
        let holder = let_go_after(writer, Duration::from_millis(50));
        assert!(!write_lock_held_elsewhere(&prober, BUSY_TIMEOUT).unwrap());
        holder.join().unwrap();
        assert!(prober.is_autocommit(), "no transaction left open");
        // Kept: said after the short wait, and the full wait is put back.
        let (mut writer, _) = open(&path, &schema(V1)).unwrap();
        let held = begin_write(&mut writer, &path, &schema(V1), "x").unwrap();
        let started = std::time::Instant::now();
        assert!(write_lock_held_elsewhere(&prober, BUSY_TIMEOUT).unwrap());
        let took = started.elapsed();
        assert!(
            took >= LOCK_NOTE_AFTER && took < Duration::from_secs(5),
            "{took:?}"
        );
        assert_eq!(lock_wait(&prober).unwrap(), BUSY_TIMEOUT);
        drop(held);
        drop((writer, prober));
        let holder = hold_exclusively(&path);
        let prober = Connection::open(&path).unwrap();
        let started = std::time::Instant::now();
        assert!(reader_note(&prober, &path, BUSY_TIMEOUT).is_some());
        assert!(started.elapsed() >= LOCK_NOTE_AFTER);
        assert_eq!(lock_wait(&prober).unwrap(), BUSY_TIMEOUT);
        drop(holder);
        assert_eq!(reader_note(&prober, &path, BUSY_TIMEOUT), None);
    }

    #[test]
    fn a_write_lock_held_elsewhere_is_seen_at_once() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.sqlite");
        let (mut holder, _) = open(&path, &schema(V1)).unwrap();
        let (mut prober, _) = open(&path, &schema(V1)).unwrap();
        assert!(!write_lock_held_elsewhere(&prober, BUSY_TIMEOUT).unwrap());
        let held = begin_write(&mut holder, &path, &schema(V1), "importing").unwrap();
        let started = std::time::Instant::now();
        assert!(write_lock_held_elsewhere(&prober, BUSY_TIMEOUT).unwrap());
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "it did not wait"
        );
        drop(held);
        assert!(!write_lock_held_elsewhere(&prober, BUSY_TIMEOUT).unwrap());
        assert!(prober.is_autocommit(), "no transaction left open");
        let wait: i64 = prober
            .query_row("PRAGMA busy_timeout", [], |r| r.get(0))
            .unwrap();
        assert_eq!(wait, BUSY_TIMEOUT.as_millis() as i64);
        assert!(begin_write(&mut prober, &path, &schema(V1), "x").is_ok());
        // A shorter wait the connection was given is the one put back.
        let short = Duration::from_millis(200);
        set_lock_wait(&prober, short).unwrap();
        assert!(!write_lock_held_elsewhere(&prober, short).unwrap());
        let wait: i64 = prober
            .query_row("PRAGMA busy_timeout", [], |r| r.get(0))
            .unwrap();
        assert_eq!(wait, 200);
    }

    /// A path of exactly `len` bytes under `base` (canonical) ending in `name`, its
    /// directories made.
    fn path_of_len(base: &Path, len: usize, name: &str) -> PathBuf {
        let mut dir = std::fs::canonicalize(base).unwrap();
        let mut need = len - dir.as_os_str().len() - 1 - name.len();
        while need > 0 {
            // Each directory adds `/` and its name; never leave 1 byte, which none can take.
            let mut k = (need - 1).min(200);
            if need - (k + 1) == 1 {
                k -= 1;
            }
            dir.push("d".repeat(k));
            need -= k + 1;
        }
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join(name);
        assert_eq!(path.as_os_str().len(), len);
        path
    }

    /// What [`MAX_PATH_BYTES`] stands on: the bundled SQLite opens, creates and writes a file
    /// whose full path is that long, and refuses one a byte longer.
    #[test]
    fn sqlite_opens_a_path_of_at_most_max_path_bytes() {
        let dir = tempfile::tempdir().unwrap();
        let fits = path_of_len(dir.path(), MAX_PATH_BYTES, "t.sqlite");
        let conn = Connection::open(&fits).unwrap();
        conn.execute_batch("PRAGMA journal_mode=WAL; CREATE TABLE a(x); INSERT INTO a VALUES (1);")
            .unwrap();
        drop(conn);
        assert!(fits.is_file());
        let over = path_of_len(dir.path(), MAX_PATH_BYTES + 1, "t.sqlite");
        let refused = Connection::open(&over)
            .and_then(|c| c.execute_batch("CREATE TABLE a(x)"))
            .unwrap_err();
        assert_eq!(refused.sqlite_error_code(), Some(ErrorCode::CannotOpen));
        assert!(!over.exists());
    }

    /// A tester's F4: a store whose path is too long for SQLite was said as "its directory
    /// is read-only or not accessible", sending the operator to the permissions. It is
    /// refused up front, new or existing, read-write or read-only, naming the path, its
    /// length and the most SQLite takes; nothing is created, and a stored file is left as
    /// it is. One that fits opens as ever.
    #[test]
    fn a_path_too_long_for_sqlite_is_said_so_not_as_permissions() {
        let dir = tempfile::tempdir().unwrap();
        let said = |r: anyhow::Result<(Connection, bool)>| format!("{:#}", r.err().unwrap());
        // New, longer than SQLite takes at all.
        let over = path_of_len(dir.path(), MAX_PATH_BYTES + 1, "t.sqlite");
        let extra = crate::fsio::temp_name_extra();
        let err = open(&over, &schema(V1)).err().unwrap();
        assert_eq!(crate::exit::code_for(&err), crate::exit::BAD_INPUT);
        assert_eq!(
            format!("{err:#}"),
            format!(
                "{}: the path is too long for SQLite to open the test file ({} bytes; at most \
                 {} for a new test file, which is made under a name {extra} bytes longer beside \
                 it first); nothing was changed: use a shorter path",
                over.display(),
                MAX_PATH_BYTES + 1,
                MAX_PATH_BYTES - extra
            )
        );
        let over_dir = over.parent().unwrap();
        assert_eq!(
            std::fs::read_dir(over_dir).unwrap().count(),
            0,
            "nothing made"
        );
        // New, fitting SQLite but not the temporary name it is made under first.
        let near = path_of_len(dir.path(), MAX_PATH_BYTES - 1, "t.sqlite");
        let err = said(open(&near, &schema(V1)));
        assert!(
            err.contains("too long for SQLite") && !err.contains("read-only"),
            "{err}"
        );
        assert!(!near.exists());
        // Existing: made at a short path, then moved to one SQLite cannot open.
        let short = dir.path().join("s.sqlite");
        let (conn, _) = open(&short, &schema(V1)).unwrap();
        conn.execute("INSERT INTO a(x) VALUES (1)", []).unwrap();
        drop(conn);
        let before = std::fs::read(&short).unwrap();
        std::fs::rename(&short, &over).unwrap();
        let err = said(open(&over, &schema(V1)));
        assert_eq!(
            err,
            format!(
                "{}: the path is too long for SQLite to open the test file ({} bytes; at most \
                 {MAX_PATH_BYTES}); nothing was changed: use a shorter path",
                over.display(),
                MAX_PATH_BYTES + 1
            )
        );
        let err = format!(
            "{:#}",
            open_existing_read_only(&over, &schema(V1)).err().unwrap()
        );
        assert!(err.contains(&format!("at most {MAX_PATH_BYTES})")), "{err}");
        assert_eq!(std::fs::read(&over).unwrap(), before, "left as it was");
        let mut names: Vec<_> = std::fs::read_dir(over_dir)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        names.sort();
        assert_eq!(names, ["t.sqlite"], "no -wal or -shm made beside it");
        // Through a relative path or a link, what counts is the full path SQLite opens.
        let link = dir.path().join("l");
        std::os::unix::fs::symlink(over_dir, &link).unwrap();
        let err = said(open(&link.join("t.sqlite"), &schema(V1)));
        assert!(
            err.contains(&format!("({} bytes (in full ", MAX_PATH_BYTES + 1)),
            "{err}"
        );
        // Existing and as long as SQLite takes: opened and read as ever.
        let fits = path_of_len(dir.path(), MAX_PATH_BYTES, "t.sqlite");
        std::fs::rename(&over, &fits).unwrap();
        let (conn, created) = open(&fits, &schema(V1)).unwrap();
        assert!(!created);
        let x: i64 = conn.query_row("SELECT x FROM a", [], |r| r.get(0)).unwrap();
        assert_eq!(x, 1);
        drop(conn);
        assert!(
            open_existing_read_only(&fits, &schema(V1))
                .unwrap()
                .is_some()
        );
    }

    /// Read-only opening creates nothing, migrates nothing and writes nothing.
    #[test]
    fn read_only_opening_creates_and_migrates_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.sqlite");
        assert!(
            open_existing_read_only(&path, &schema(V1))
                .unwrap()
                .is_none()
        );
        assert!(!path.exists());
        let (conn, _) = open(&path, &schema(V1)).unwrap();
        conn.execute("INSERT INTO a(x) VALUES (1)", []).unwrap();
        drop(conn);
        let before = std::fs::read(&path).unwrap();
        let err = open_existing_read_only(&path, &schema(V2))
            .err()
            .unwrap()
            .to_string();
        assert!(err.contains("needs migrating from schema 1 to 2"), "{err}");
        let conn = open_existing_read_only(&path, &schema(V1))
            .unwrap()
            .unwrap();
        let x: i64 = conn.query_row("SELECT x FROM a", [], |r| r.get(0)).unwrap();
        assert_eq!(x, 1);
        assert!(conn.execute("INSERT INTO a(x) VALUES (2)", []).is_err());
        drop(conn);
        assert_eq!(std::fs::read(&path).unwrap(), before);
        let mut names: Vec<String> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        assert_eq!(names, ["t.sqlite"], "no -wal or -shm left beside it");
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
            long_writer: "a test?",
            migrations: V1,
        };
        let err = open(&path, &other).err().unwrap().to_string();
        assert!(err.contains("not a ctxconsole other"), "{err}");
    }
}
