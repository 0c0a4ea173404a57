//! Files on disk, the one way: every file ctxconsole writes goes through [`write_file`]
//! (a private temporary file beside the target, fsync, rename; outputs the user names are
//! first checked by [`check_output`], together [`write_output`]); a new SQLite file is built
//! in [`new_private_file_beside`] and given its name by [`link_into_place`]; every file it
//! creates is private (files 0600, directories 0700); every file a user names is read
//! through [`open_regular`] (a directory, FIFO or device is an error naming it, and opening
//! never blocks); and what happened to files is said once per run through [`notice`].
//!
//! Unix only: modes, `O_NONBLOCK` and rename-over are what the product runs on.

use crate::core::terminal_text::ShownPath;
use std::collections::BTreeSet;
use std::fs::{File, OpenOptions};
use std::io::{self, Read, Write};
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::exit::bad_input;

/// Files holding prompts, pastes, plans and exports: the owner alone.
pub const PRIVATE_FILE_MODE: u32 = 0o600;
/// Directories ctxconsole creates (the workspace, a store's directory).
pub const PRIVATE_DIR_MODE: u32 = 0o700;

/// `O_NONBLOCK`: opening a FIFO for reading must not wait for a writer. std has no
/// constant for it and the project takes no `libc` for one number.
#[cfg(any(target_os = "linux", target_os = "android"))]
const O_NONBLOCK: i32 = 0o4000;
#[cfg(not(any(target_os = "linux", target_os = "android")))]
const O_NONBLOCK: i32 = 0x0004;

/// `O_NOFOLLOW`: opening a symbolic link fails instead of opening what it points to.
#[cfg(any(target_os = "linux", target_os = "android"))]
const O_NOFOLLOW: i32 = 0o400000;
#[cfg(not(any(target_os = "linux", target_os = "android")))]
const O_NOFOLLOW: i32 = 0x0100;

/// The first 16 bytes of every SQLite database.
pub const SQLITE_HEADER: &[u8; 16] = b"SQLite format 3\0";

// ---- notices -------------------------------------------------------------------------------

struct Notices {
    said: BTreeSet<String>,
    held: Option<Vec<String>>,
}

static NOTICES: Mutex<Notices> = Mutex::new(Notices {
    said: BTreeSet::new(),
    held: None,
});

fn notices() -> std::sync::MutexGuard<'static, Notices> {
    // A panic elsewhere while holding it leaves a set of strings: still usable.
    NOTICES
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Make a write past the process's file-size limit (`ulimit -f`, systemd's `LimitFSIZE`) an
/// error, as a full disk is: by default SIGXFSZ ends the process, and `send` died after the
/// answer was paid for, printing and storing nothing (tester 8 F18). With a handler that
/// does nothing, the write fails with EFBIG, which every store path already reports (the
/// answers `NOT STORED` and printed whole). Called once at start; if the handler cannot be
/// set, the default stays.
pub fn write_limit_is_an_error() {
    let _ = signal_hook::flag::register(
        signal_hook::consts::SIGXFSZ,
        std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false)),
    );
}

/// Say something about a file once per run: on stderr, or kept for the console (see
/// [`hold_notices`]). The same text twice is said once.
pub fn notice(message: String) {
    let mut n = notices();
    if !n.said.insert(message.clone()) {
        return;
    }
    match &mut n.held {
        Some(held) => held.push(message),
        // Paths in notices came from outside: shown made safe, like all CLI text, and
        // without a configured key.
        None => {
            let message = crate::llm::redact::for_output(&message);
            let text = crate::core::terminal_text::for_terminal(&message);
            let _ = writeln!(std::io::stderr().lock(), "ctxconsole: {text}");
        }
    }
}

/// From now on keep notices for [`take_notices`] instead of printing them: the console
/// owns the terminal and shows them itself.
pub fn hold_notices() {
    let mut n = notices();
    if n.held.is_none() {
        n.held = Some(Vec::new());
    }
}

/// Notices kept since the last call (none unless [`hold_notices`] was called).
pub fn take_notices() -> Vec<String> {
    notices()
        .held
        .as_mut()
        .map(std::mem::take)
        .unwrap_or_default()
}

/// Make a file of ours that others may read or write private (600), and say so: for a
/// file that will hold prompts and that ctxconsole makes what it is (a log it writes, an
/// empty file it creates a store in), not one it only opens, which
/// [`report_if_loose`] reports instead. `what` names it in messages; `when` ends the
/// notice.
pub fn make_private(file: &File, path: &Path, what: &str, when: &str) -> anyhow::Result<()> {
    let mode = file
        .metadata()
        .map_err(|e| anyhow::anyhow!("{}: cannot read the {what}: {e}", path.shown()))?
        .permissions()
        .mode();
    if mode & 0o077 != 0 {
        file.set_permissions(std::fs::Permissions::from_mode(PRIVATE_FILE_MODE))
            .map_err(|e| {
                anyhow::anyhow!(
                    "{}: readable by others ({:o}) and cannot be made private: {e}",
                    path.shown(),
                    mode & 0o777
                )
            })?;
        notice(format!(
            "{}: was readable by others ({:o}); made private (600) {when}",
            path.shown(),
            mode & 0o777
        ));
    }
    Ok(())
}

/// Report `path` once when others than its owner may read or write it. Never changes the
/// mode: the operator may have reasons, so they are told how, not overruled.
pub fn report_if_loose(path: &Path, meta: &std::fs::Metadata) {
    let mode = meta.permissions().mode() & 0o777;
    if mode & 0o077 == 0 {
        return;
    }
    let who = match (mode & 0o007 != 0, mode & 0o070 != 0) {
        (true, _) => "other users",
        _ => "its group",
    };
    let how = if mode & 0o044 != 0 {
        "readable"
    } else {
        "writable"
    };
    let (what, fix) = if meta.is_dir() {
        ("directory", PRIVATE_DIR_MODE)
    } else {
        ("file", PRIVATE_FILE_MODE)
    };
    notice(format!(
        "{}: this {what} is {how} by {who} ({mode:o}) and may hold prompts and pastes: chmod {fix:o} {}",
        path.shown(),
        shell_word(path)
    ));
}

/// [`report_if_loose`] for a file of ours, by path (a file that cannot be read is not
/// reported: opening it said why).
pub fn report_if_loose_file(path: &Path) {
    if let Ok(meta) = std::fs::metadata(path) {
        report_if_loose(path, &meta);
    }
}

/// `path` with `suffix` put after its last byte (`history.sqlite` → `history.sqlite-wal`),
/// whatever bytes the name holds.
pub fn with_suffix(path: &Path, suffix: &str) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(suffix);
    PathBuf::from(name)
}

/// A path as one shell word, for a command the operator may paste.
///
/// A name holding a line feed, a terminal control, an invisible or bidi character or bytes
/// that are not UTF-8 is ANSI-C quoted (`$'a\nb'`: bash, zsh, ksh), each such character an
/// escape: the word stays on its line and pastes back as the same name (a line feed in the
/// workspace's name had split the `chmod 700` notice over two lines).
pub fn shell_word(path: &Path) -> String {
    use crate::core::terminal_text::needs_escape;
    use std::fmt::Write as _;
    use std::os::unix::ffi::OsStrExt;
    let bytes = path.as_os_str().as_bytes();
    if bytes
        .iter()
        .all(|b| b.is_ascii_alphanumeric() || b"/._-+,:@%".contains(b))
    {
        return String::from_utf8_lossy(bytes).into_owned();
    }
    let plain = |c: char| !(c == '\n' || c == '\t' || needs_escape(c));
    if let Ok(text) = std::str::from_utf8(bytes)
        && text.chars().all(plain)
    {
        return format!("'{}'", text.replace('\'', r"'\''"));
    }
    let mut word = String::from("$'");
    for chunk in bytes.utf8_chunks() {
        for c in chunk.valid().chars() {
            let _ = match c {
                '\\' | '\'' => write!(word, "\\{c}"),
                '\n' => write!(word, "\\n"),
                '\t' => write!(word, "\\t"),
                '\r' => write!(word, "\\r"),
                c if plain(c) => write!(word, "{c}"),
                c if u32::from(c) < 0x80 => write!(word, "\\x{:02x}", u32::from(c)),
                c if u32::from(c) <= 0xffff => write!(word, "\\u{:04x}", u32::from(c)),
                c => write!(word, "\\U{:08x}", u32::from(c)),
            };
        }
        for b in chunk.invalid() {
            let _ = write!(word, "\\x{b:02x}");
        }
    }
    word.push('\'');
    word
}

// ---- private directories and files ---------------------------------------------------------

/// Create `dir` and any missing parents, each 0700. Existing directories are not changed.
pub fn create_private_dirs(dir: &Path) -> io::Result<()> {
    if dir.as_os_str().is_empty() || dir.is_dir() {
        return Ok(());
    }
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(PRIVATE_DIR_MODE)
        .create(dir)
}

/// The workspace (or data) directory, about to hold `file` (a store, the cache): created
/// 0700 when missing. An existing directory others may read is reported when `file` is
/// about to be created in it, once, not at every run: the file itself is private, the
/// directory only shows its name.
pub fn private_dir(dir: &Path, file: &str) -> anyhow::Result<()> {
    match std::fs::metadata(dir) {
        Ok(meta) if meta.is_dir() => {
            if std::fs::symlink_metadata(dir.join(file)).is_err() {
                report_if_loose(dir, &meta);
            }
            Ok(())
        }
        Ok(meta) => Err(bad_input(format!(
            "{}: is {}, not a directory",
            dir.shown(),
            kind_of(&meta.file_type())
        ))),
        Err(e) if e.kind() == io::ErrorKind::NotFound => create_private_dirs(dir)
            .map_err(|e| anyhow::anyhow!("{}: cannot create the directory: {e}", dir.shown())),
        Err(e) => Err(anyhow::anyhow!("{}: {e}", dir.shown())),
    }
}

/// A new private file (0600) to build `path` in, beside it, or `None` when `path` already
/// exists as a file or directory (opening it decides whether it is ours; a directory gets
/// its own message there). Anything else under the name — a FIFO, a device, a symbolic link
/// to nothing — is an error naming it. Missing parent directories are created 0700.
/// Finish with [`link_into_place`].
pub fn new_private_file_beside(path: &Path) -> anyhow::Result<Option<PathBuf>> {
    match std::fs::symlink_metadata(path) {
        Ok(_) => {
            return match std::fs::metadata(path) {
                Ok(meta) if meta.is_file() || meta.is_dir() => Ok(None),
                Ok(meta) => Err(not_a_file(path, &meta.file_type())),
                // SQLite would create the link's target with the umask's mode.
                Err(e) if e.kind() == io::ErrorKind::NotFound => Err(bad_input(format!(
                    "{}: a symbolic link to a file that does not exist",
                    path.shown()
                ))),
                Err(e) => Err(anyhow::anyhow!("{}: {e}", path.shown())),
            };
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => {}
        Err(e) => return Err(anyhow::anyhow!("{}: {e}", path.shown())),
    }
    let dir = parent_of(path);
    create_private_dirs(&dir)
        .map_err(|e| anyhow::anyhow!("{}: cannot create the directory: {e}", dir.shown()))?;
    remove_dead_temps(&dir, path);
    let (tmp, _file) = temp_beside(&dir, path).map_err(|e| match e.kind() {
        io::ErrorKind::PermissionDenied | io::ErrorKind::ReadOnlyFilesystem => anyhow::anyhow!(
            "{}: cannot create: its directory is read-only or not accessible ({e})",
            path.shown()
        ),
        _ => anyhow::anyhow!("{}: cannot create: {e}", path.shown()),
    })?;
    Ok(Some(tmp))
}

/// Give the finished file `tmp` its name `path`, unless another process gave that name a
/// file first: then `tmp` is removed and the answer is `false` (open theirs). On a
/// filesystem without hard links it falls back to a rename after checking the name is free.
pub fn link_into_place(tmp: &Path, path: &Path) -> io::Result<bool> {
    let placed = match std::fs::hard_link(tmp, path) {
        Ok(()) => Ok(true),
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => Ok(false),
        Err(_) if std::fs::symlink_metadata(path).is_err() => {
            std::fs::rename(tmp, path).map(|()| true)
        }
        Err(_) => Ok(false),
    };
    let _ = std::fs::remove_file(tmp);
    if placed.is_ok() {
        let _ = File::open(parent_of(path)).and_then(|d| d.sync_all());
    }
    placed
}

fn parent_of(path: &Path) -> PathBuf {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

// ---- reading what the user names -----------------------------------------------------------

/// "a directory", "a FIFO", …: what a path is when it is not a regular file.
pub fn kind_of(ft: &std::fs::FileType) -> &'static str {
    use std::os::unix::fs::FileTypeExt;
    if ft.is_dir() {
        "a directory"
    } else if ft.is_fifo() {
        "a FIFO"
    } else if ft.is_char_device() {
        "a character device"
    } else if ft.is_block_device() {
        "a block device"
    } else if ft.is_socket() {
        "a socket"
    } else if ft.is_file() {
        "a file"
    } else {
        "not a regular file"
    }
}

fn not_a_file(path: &Path, ft: &std::fs::FileType) -> anyhow::Error {
    bad_input(format!(
        "{}: is {}, not a file",
        crate::core::terminal_text::path(path),
        kind_of(ft)
    ))
}

/// Open a file the user named (or a workspace file) for reading: anything but a regular
/// file, through symbolic links, is bad input naming it. The type is checked before opening
/// and again on the open descriptor, and the open never blocks, so a FIFO swapped in between
/// is refused rather than waited on.
pub fn open_regular(path: &Path) -> anyhow::Result<File> {
    let cannot = |e: io::Error| {
        bad_input(format!(
            "{}: cannot read: {e}",
            crate::core::terminal_text::path(path)
        ))
    };
    let meta = std::fs::metadata(path).map_err(cannot)?;
    if !meta.is_file() {
        return Err(not_a_file(path, &meta.file_type()));
    }
    let file = OpenOptions::new()
        .read(true)
        .custom_flags(O_NONBLOCK)
        .open(path)
        .map_err(cannot)?;
    let meta = file.metadata().map_err(cannot)?;
    if !meta.is_file() {
        return Err(not_a_file(path, &meta.file_type()));
    }
    Ok(file)
}

/// A file of ctxconsole's own that holds a secret (the MCP token), opened for reading as it
/// is, or `None` when there is no such name. A symbolic link under the name is an error
/// (checked before opening and refused by the open itself), and so is anything but a
/// regular file; the caller judges the owner and mode on [`File::metadata`], the open
/// descriptor's, so nothing swapped in after the checks is read.
pub fn open_own_secret(path: &Path) -> anyhow::Result<Option<File>> {
    let cannot = |e: io::Error| {
        bad_input(format!(
            "{}: cannot read: {e}",
            crate::core::terminal_text::path(path)
        ))
    };
    let link = || {
        bad_input(format!(
            "{}: is a symbolic link; it must be a file of its own",
            crate::core::terminal_text::path(path)
        ))
    };
    match std::fs::symlink_metadata(path) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(cannot(e)),
        Ok(meta) if meta.file_type().is_symlink() => return Err(link()),
        Ok(meta) if !meta.is_file() => return Err(not_a_file(path, &meta.file_type())),
        Ok(_) => {}
    }
    let file = OpenOptions::new()
        .read(true)
        .custom_flags(O_NONBLOCK | O_NOFOLLOW)
        .open(path)
        .map_err(|e| {
            // ELOOP: a symbolic link put there since the check.
            if std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink()) {
                link()
            } else {
                cannot(e)
            }
        })?;
    let meta = file.metadata().map_err(cannot)?;
    if !meta.is_file() {
        return Err(not_a_file(path, &meta.file_type()));
    }
    Ok(Some(file))
}

/// How much one kind of file read whole may hold, and what a refusal calls that kind: the
/// one bound every whole read goes through, declared once per kind.
#[derive(Debug, Clone, Copy)]
pub struct WholeReadBound {
    pub max_bytes: u64,
    /// Says whose bound it is in a refusal: "the 256 MiB {holder} may hold".
    pub holder: &'static str,
}

/// The most a file (or stdin) read whole may hold: every workspace file, catalog, registry,
/// attachment and paste. Bigger ones are refused before they are held in memory (a 3 GB
/// `budgets.toml` took 6 GB and 20 s to be told it was broken); JSON Lines imports stream
/// and have no such limit.
pub const READ_WHOLE_MAX_BYTES: u64 = 256 * 1024 * 1024;

/// [`READ_WHOLE_MAX_BYTES`], for [`read_regular`] and [`read_whole`].
pub const WORKSPACE_FILE: WholeReadBound = WholeReadBound {
    max_bytes: READ_WHOLE_MAX_BYTES,
    holder: "a file read whole",
};

/// A local model's `model.safetensors`, read whole into memory to build the model: 2 GiB,
/// room for BERT-large (1.3 GB) and every BERT-base sentence model (about 440 MB, over the
/// workspace files' 256 MiB, which had ruled them out: tester 16 F8).
pub const MODEL_WEIGHTS: WholeReadBound = WholeReadBound {
    max_bytes: 2 * 1024 * 1024 * 1024,
    holder: "a model's weights file",
};

/// [`open_regular`] for a file that will be read whole: one bigger than `bound` is refused
/// at once, before any of it is read.
fn open_for_whole_read(path: &Path, bound: WholeReadBound) -> anyhow::Result<File> {
    let file = open_regular(path)?;
    let len = file
        .metadata()
        .map_err(|e| {
            bad_input(format!(
                "{}: cannot read: {e}",
                crate::core::terminal_text::path(path)
            ))
        })?
        .len();
    if len > bound.max_bytes {
        return Err(bad_input(format!(
            "{}: {} MiB, more than the {} MiB {} may hold",
            crate::core::terminal_text::path(path),
            len / (1024 * 1024),
            bound.max_bytes / (1024 * 1024),
            bound.holder
        )));
    }
    Ok(file)
}

/// A workspace file's bytes, or `None` when there is no such name. A directory, FIFO or
/// device under the name is an error naming it, never a silent skip.
pub fn read_optional(path: &Path) -> anyhow::Result<Option<Vec<u8>>> {
    match std::fs::symlink_metadata(path) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        _ => {}
    }
    read_regular(path).map(Some)
}

/// A regular file's bytes (see [`open_regular`]), at most [`READ_WHOLE_MAX_BYTES`].
pub fn read_regular(path: &Path) -> anyhow::Result<Vec<u8>> {
    read_regular_within(path, WORKSPACE_FILE)
}

/// A regular file's bytes (see [`open_regular`]), at most `bound`'s.
pub fn read_regular_within(path: &Path, bound: WholeReadBound) -> anyhow::Result<Vec<u8>> {
    let file = open_for_whole_read(path, bound)?;
    read_whole_within(file, &crate::core::terminal_text::path(path), bound)
}

/// Everything `reader` gives, refused as bad input naming `origin` once it passes
/// [`READ_WHOLE_MAX_BYTES`] (counted as read: a file may grow after its size was looked at).
pub fn read_whole(reader: impl Read, origin: &str) -> anyhow::Result<Vec<u8>> {
    read_whole_within(reader, origin, WORKSPACE_FILE)
}

/// [`read_whole`] within `bound`.
fn read_whole_within(
    reader: impl Read,
    origin: &str,
    bound: WholeReadBound,
) -> anyhow::Result<Vec<u8>> {
    let mut bytes = Vec::new();
    reader
        .take(bound.max_bytes + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| bad_input(format!("{origin}: cannot read: {e}")))?;
    if bytes.len() as u64 > bound.max_bytes {
        return Err(bad_input(format!(
            "{origin}: more than {} MiB, the most {} may hold",
            bound.max_bytes / (1024 * 1024),
            bound.holder
        )));
    }
    Ok(bytes)
}

// ---- writing -------------------------------------------------------------------------------

/// Write `bytes` to `path` whole or not at all: a new private file beside it (0600, created
/// exclusively), fsync, then rename over `path` (or, with `replace` false, a hard link that
/// fails if `path` appeared meanwhile), then fsync the directory. A reader never sees half a
/// file and a crash leaves either the old file or the new one. Refusing to write over things
/// that must not be replaced is [`check_output`]'s job.
pub fn write_file(path: &Path, bytes: &[u8], replace: bool) -> io::Result<()> {
    let dir = parent_of(path);
    let (tmp, mut file) = temp_beside(&dir, path)?;
    let result = file
        .write_all(bytes)
        .and_then(|()| file.sync_all())
        .and_then(|()| {
            drop(file);
            if replace {
                std::fs::rename(&tmp, path)
            } else {
                // link(2) refuses an existing target: no window where a file that appeared
                // after the check is replaced.
                std::fs::hard_link(&tmp, path).and_then(|()| std::fs::remove_file(&tmp))
            }
        });
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
        return result;
    }
    // The rename is durable once the directory is synced. Some filesystems refuse to sync a
    // directory; the file is whole either way, so that is not a failure.
    let _ = File::open(&dir).and_then(|d| d.sync_all());
    Ok(())
}

/// Whether `file` is the file `path` names now (the same device and inode, the path
/// followed): false when the name was given to another file since (a rewrite renamed over
/// it, a log moved aside) or names none.
pub fn is_file_at(file: &File, path: &Path) -> bool {
    match (file.metadata(), std::fs::metadata(path)) {
        (Ok(open), Ok(named)) => open.dev() == named.dev() && open.ino() == named.ino(),
        _ => false,
    }
}

/// How long a writer that appends to a file others may rewrite ([`open_for_rewrite`]) waits
/// for the rewrite to end before it writes anyway: a rewrite of a 16 MiB log takes well
/// under a second; a `scrub` stopped mid-rewrite (ctrl+z) must not stop every process that
/// logs.
pub const REWRITE_WAIT: std::time::Duration = std::time::Duration::from_secs(10);

/// Take the shared lock a writer holds while it appends to `file` (see
/// [`open_for_rewrite`]), waiting at most [`REWRITE_WAIT`] for a rewrite to end. False when
/// it was not had (waited out, or a file system without locks): the writer then writes
/// without it.
pub fn lock_for_append(file: &File) -> bool {
    lock_within_wait(|| file.try_lock_shared()).unwrap_or(false)
}

/// `try_lock` tried until the lock is had (`Ok(true)`) or [`REWRITE_WAIT`] has passed
/// (`Ok(false)`); an error other than the lock being held is returned as it came. The one
/// wait both sides of a rewrite keep.
fn lock_within_wait(try_lock: impl Fn() -> Result<(), std::fs::TryLockError>) -> io::Result<bool> {
    let started = std::time::Instant::now();
    loop {
        match try_lock() {
            Ok(()) => return Ok(true),
            Err(std::fs::TryLockError::WouldBlock) if started.elapsed() < REWRITE_WAIT => {
                std::thread::sleep(std::time::Duration::from_millis(5));
            }
            Err(std::fs::TryLockError::WouldBlock) => return Ok(false),
            Err(std::fs::TryLockError::Error(e)) => return Err(e),
        }
    }
}

/// A workspace file that another process may be appending to (a log), opened for reading
/// under an exclusive lock (`flock`), for [`write_file`] to replace while the lock is held;
/// dropping the file lets go. A writer appends under the shared lock ([`lock_for_append`])
/// and then checks that its file is still the one at the path ([`is_file_at`]), reopening
/// the path when not: so a line is never appended between the read and the rename (it
/// waits, and then goes to the new file), nor to the replaced file after it (tester 50 F1:
/// every line a running `mcp --http --log` wrote after a `scrub` went to the unlinked log).
/// `None` when there is no file of that name; anything but a regular file is an error
/// naming it, as [`open_regular`] says.
pub fn open_for_rewrite(path: &Path) -> anyhow::Result<Option<File>> {
    // Each turn opens the file at the path and locks it; a file renamed over the path
    // between the two (another rewrite) leaves the lock on the old one: the next turn takes
    // the new one.
    for _ in 0..100 {
        match std::fs::symlink_metadata(path) {
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
            _ => {}
        }
        let file = open_regular(path)?;
        lock_to_rewrite(&file, path)?;
        if is_file_at(&file, path) {
            return Ok(Some(file));
        }
    }
    Err(anyhow::anyhow!(
        "{}: replaced 100 times while it was being locked to rewrite it",
        crate::core::terminal_text::path(path)
    ))
}

/// The exclusive lock of [`open_for_rewrite`], waited for at most [`REWRITE_WAIT`] as a
/// writer waits for it: a scrub stopped with ctrl+z, or any other holder, fails the next
/// rewrite naming the file rather than hanging it silently (review 50 L1).
fn lock_to_rewrite(file: &File, path: &Path) -> anyhow::Result<()> {
    match lock_within_wait(|| file.try_lock()) {
        Ok(true) => Ok(()),
        Ok(false) => Err(anyhow::anyhow!(
            "{}: locked by another process for {}; nothing was rewritten (another scrub holds \
             it, one stopped with ctrl+z perhaps: end it and run this again)",
            crate::core::terminal_text::path(path),
            crate::core::duration::describe(REWRITE_WAIT)
        )),
        Err(e) => Err(anyhow::anyhow!(
            "{}: cannot lock it to rewrite it: {e}",
            crate::core::terminal_text::path(path)
        )),
    }
}

static TEMP_SEQ: AtomicU64 = AtomicU64::new(0);

/// Remove what a process that died building `target` (killed while the first run seeded
/// the store) left beside it: its `.NAME.PID.N.tmp` files and their SQLite companions,
/// when no process of that PID is alive. Nothing else is touched (tester 21 F7: they stayed
/// in the workspace for good).
fn remove_dead_temps(dir: &Path, target: &Path) {
    let Some(stem) = target.file_name().map(|n| n.to_string_lossy().into_owned()) else {
        return;
    };
    let prefix = format!(".{stem}.");
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let Some(rest) = name.strip_prefix(&prefix) else {
            continue;
        };
        let base = SQLITE_COMPANIONS
            .iter()
            .find_map(|s| rest.strip_suffix(s))
            .unwrap_or(rest);
        let Some(base) = base.strip_suffix(".tmp") else {
            continue;
        };
        let Some((pid, seq)) = base.split_once('.') else {
            continue;
        };
        let (Ok(pid), true) = (
            pid.parse::<i32>(),
            !seq.is_empty() && seq.bytes().all(|b| b.is_ascii_digit()),
        ) else {
            continue;
        };
        let alive = pid <= 0
            || pid as u32 == std::process::id()
            || !matches!(
                nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), None),
                Err(nix::errno::Errno::ESRCH)
            );
        if !alive && entry.file_type().is_ok_and(|t| t.is_file()) {
            let _ = std::fs::remove_file(entry.path());
        }
    }
}

/// How many bytes longer than a file's own name is the name of the temporary file
/// [`new_private_file_beside`] would make for it now (`.{name}.{pid}.{n}.tmp` against
/// `{name}`): what a file made there first needs beyond its own path (a store's path length
/// is checked against SQLite's limit before anything is made: `store::sqlite`).
pub fn temp_name_extra() -> usize {
    let next = TEMP_SEQ.load(Ordering::Relaxed);
    format!("..{}.{next}.tmp", std::process::id()).len()
}

/// A new 0600 file in `dir` named after `target`, hidden, unique to this process and call.
fn temp_beside(dir: &Path, target: &Path) -> io::Result<(PathBuf, File)> {
    let stem = target
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "out".into());
    loop {
        let n = TEMP_SEQ.fetch_add(1, Ordering::Relaxed);
        let tmp = dir.join(format!(".{stem}.{}.{n}.tmp", std::process::id()));
        match OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(PRIVATE_FILE_MODE)
            .open(&tmp)
        {
            Ok(f) => return Ok((tmp, f)),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(e),
        }
    }
}

/// A file ctxconsole must never write over, and what to call it in the refusal.
#[derive(Debug, Clone)]
pub struct Protected {
    pub path: PathBuf,
    /// "the open history store", "the output cache".
    pub what: String,
}

/// The suffixes SQLite gives a database's companion files.
const SQLITE_COMPANIONS: [&str; 3] = ["-wal", "-shm", "-journal"];

/// Where `path` really points: the file itself when it exists (through symbolic links and
/// `..`), else its canonical directory joined with its name.
pub fn canonical_target(path: &Path) -> PathBuf {
    if let Ok(p) = std::fs::canonicalize(path) {
        return p;
    }
    let parent = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    match (std::fs::canonicalize(parent), path.file_name()) {
        (Ok(dir), Some(name)) => dir.join(name),
        _ => path.to_path_buf(),
    }
}

/// Whether the file at `path` starts with SQLite's header.
pub fn is_sqlite_database(path: &Path) -> bool {
    let mut head = [0u8; 16];
    open_regular(path)
        .and_then(|mut f| f.read_exact(&mut head).map_err(anyhow::Error::from))
        .is_ok_and(|()| &head == SQLITE_HEADER)
}

/// May an output (an export) be written at `path`? Refused, whatever `force` says: a
/// protected file or its -wal/-shm/-journal, any SQLite database or a companion of one, and
/// anything that is not a regular file. An existing regular file only with `force`.
/// Returns where to write: the symbolic link's target when `path` is one, so the link stays.
pub fn check_output(path: &Path, force: bool, protected: &[Protected]) -> anyhow::Result<PathBuf> {
    let name = path.shown();
    let target = canonical_target(path);
    // The same file under another name (a hard link) is the same file.
    let inode = |p: &Path| std::fs::metadata(p).ok().map(|m| (m.dev(), m.ino()));
    let target_inode = inode(&target);
    for p in protected {
        let base = canonical_target(&p.path);
        let hit = std::iter::once("").chain(SQLITE_COMPANIONS).find(|s| {
            let file = with_suffix(&base, s);
            file == target || (target_inode.is_some() && inode(&file) == target_inode)
        });
        if let Some(suffix) = hit {
            let part = if suffix.is_empty() {
                String::new()
            } else {
                format!("the {suffix} file of ")
            };
            return Err(bad_input(format!(
                "{name}: is {part}{} ({}); an export never writes over it",
                p.what,
                base.shown()
            )));
        }
    }
    let companion_of = SQLITE_COMPANIONS.iter().find_map(|s| {
        let t = target.to_string_lossy();
        t.strip_suffix(s).map(PathBuf::from)
    });
    if let Some(db) = companion_of.filter(|db| is_sqlite_database(db)) {
        return Err(bad_input(format!(
            "{name}: belongs to the SQLite database {}; an export never writes over it",
            db.shown()
        )));
    }
    let dangling = std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink())
        && std::fs::metadata(path).is_err();
    if dangling {
        // Written through, it would create a file wherever the link points; replaced, the
        // operator's link would be gone. Neither is asked for (tester 21 F7: it was said to
        // have "appeared while writing").
        return Err(bad_input(format!(
            "{name}: is a symbolic link to {}, which does not exist; an export writes through \
             a link only to an existing file: point it at one, or remove the link",
            std::fs::read_link(path)
                .map(|p| p.shown().to_string())
                .unwrap_or_else(|_| "a name that cannot be read".into())
        )));
    }
    match std::fs::metadata(&target) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(target),
        Err(e) => Err(bad_input(format!("{name}: {e}"))),
        Ok(meta) if !meta.is_file() => Err(bad_input(format!(
            "{name}: is {}, not a file to write an export into",
            kind_of(&meta.file_type())
        ))),
        Ok(_) if is_sqlite_database(&target) => Err(bad_input(format!(
            "{name}: is a SQLite database; an export never writes over one (--force or not)"
        ))),
        Ok(meta) if !force => Err(bad_input(format!(
            "{name}: already exists ({} bytes); pass --force to replace it, or choose a new name",
            meta.size()
        ))),
        Ok(_) => Ok(target),
    }
}

/// Write an output the user asked for (an export): [`check_output`], then [`write_file`].
pub fn write_output(
    path: &Path,
    bytes: &[u8],
    force: bool,
    protected: &[Protected],
) -> anyhow::Result<()> {
    let target = check_output(path, force, protected)?;
    write_file(&target, bytes, force).map_err(|e| {
        if e.kind() == io::ErrorKind::AlreadyExists {
            bad_input(format!(
                "{}: appeared while writing; pass --force to replace it",
                path.shown()
            ))
        } else {
            // The machine failed (a full disk, a directory that refuses), not the input: a
            // runtime failure, exit 1 (tester 21 F7: it exited 2).
            anyhow::anyhow!("{}: cannot write: {e}", path.shown())
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mode(p: &Path) -> u32 {
        std::fs::metadata(p).unwrap().permissions().mode() & 0o777
    }

    /// A path as a shell word stays on one line, shows no terminal control, and pastes
    /// back (into bash) as the very same bytes: plain, quoted, or ANSI-C quoted.
    #[test]
    fn a_shell_word_is_one_line_and_pastes_back_as_the_same_name() {
        use std::os::unix::ffi::OsStrExt;
        let names: [&[u8]; 8] = [
            b"/tmp/plain-dir",
            b"/tmp/with space",
            b"/tmp/it's",
            b"/tmp/ws\nFAKE notice",
            b"/tmp/esc\x1b[31m\x07red",
            "/tmp/bidi\u{202e}txt.exe\u{200b}".as_bytes(),
            b"/tmp/not-utf8-\xff\xfe-'q'\\",
            "/tmp/\u{1f600}\u{e0041}tag".as_bytes(),
        ];
        for name in names {
            let path = Path::new(std::ffi::OsStr::from_bytes(name));
            let word = shell_word(path);
            assert!(
                !word.contains(|c: char| c == '\n' || crate::core::terminal_text::needs_escape(c)),
                "{word:?}"
            );
            let out = std::process::Command::new("bash")
                .arg("-c")
                .arg(format!("printf %s {word}"))
                .output()
                .unwrap();
            assert_eq!(out.stdout, name, "{word}");
        }
        assert_eq!(shell_word(Path::new("/tmp/plain-dir")), "/tmp/plain-dir");
        assert_eq!(shell_word(Path::new("/tmp/it's")), r"'/tmp/it'\''s'");
    }

    #[test]
    fn write_file_is_private_whole_and_leaves_nothing_beside() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("out.jsonl");
        write_file(&p, b"one\n", false).unwrap();
        assert_eq!(std::fs::read(&p).unwrap(), b"one\n");
        assert_eq!(mode(&p), 0o600);
        let err = write_file(&p, b"two\n", false).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::AlreadyExists);
        assert_eq!(std::fs::read(&p).unwrap(), b"one\n");
        write_file(&p, b"two\n", true).unwrap();
        assert_eq!(std::fs::read(&p).unwrap(), b"two\n");
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    }

    #[test]
    fn check_output_protects_stores_databases_and_existing_files() {
        let dir = tempfile::tempdir().unwrap();
        let store = dir.path().join("h.sqlite");
        std::fs::write(&store, b"SQLite format 3\0rest").unwrap();
        let protected = [Protected {
            path: store.clone(),
            what: "the open history store".into(),
        }];
        for p in [
            store.clone(),
            dir.path().join("./h.sqlite"),
            dir.path().join("h.sqlite-wal"),
            dir.path().join("h.sqlite-shm"),
        ] {
            let err = check_output(&p, true, &protected).unwrap_err().to_string();
            assert!(err.contains("history store"), "{err}");
        }
        let other = dir.path().join("other.bin");
        std::fs::write(&other, b"SQLite format 3\0").unwrap();
        for p in [other.clone(), dir.path().join("other.bin-wal")] {
            let err = check_output(&p, true, &[]).unwrap_err().to_string();
            assert!(err.contains("SQLite database"), "{err}");
        }
        let text = dir.path().join("t.txt");
        std::fs::write(&text, b"x").unwrap();
        assert!(check_output(&text, false, &[]).is_err());
        assert_eq!(
            check_output(&text, true, &[]).unwrap(),
            canonical_target(&text)
        );
        let fresh = dir.path().join("new.txt");
        assert!(check_output(&fresh, false, &[]).is_ok());
    }

    #[test]
    fn open_regular_names_what_is_there_instead() {
        let dir = tempfile::tempdir().unwrap();
        let err = open_regular(dir.path()).unwrap_err().to_string();
        assert!(err.ends_with("is a directory, not a file"), "{err}");
        let err = open_regular(Path::new("/dev/null"))
            .unwrap_err()
            .to_string();
        assert!(err.contains("is a character device"), "{err}");
        assert!(read_optional(&dir.path().join("absent")).unwrap().is_none());
        let f = dir.path().join("f");
        std::fs::write(&f, b"x").unwrap();
        assert_eq!(read_optional(&f).unwrap().unwrap(), b"x");
    }

    #[test]
    fn private_files_and_directories() {
        let dir = tempfile::tempdir().unwrap();
        let nested = dir.path().join("a").join("b");
        let file = nested.join("s.sqlite");
        let tmp = new_private_file_beside(&file).unwrap().unwrap();
        assert_eq!(mode(&tmp), 0o600);
        assert!(link_into_place(&tmp, &file).unwrap());
        assert!(new_private_file_beside(&file).unwrap().is_none());
        let late = dir.path().join("late");
        std::fs::write(&late, b"x").unwrap();
        assert!(!link_into_place(&late, &file).unwrap());
        assert!(!late.exists());
        assert_eq!(mode(&file), 0o600);
        assert_eq!(std::fs::read_dir(&nested).unwrap().count(), 1);
        assert_eq!(mode(&nested), 0o700);
        assert_eq!(mode(&dir.path().join("a")), 0o700);
    }

    #[test]
    fn notices_are_said_once() {
        hold_notices();
        notice("fsio test: once".into());
        notice("fsio test: once".into());
        let got: Vec<String> = take_notices()
            .into_iter()
            .filter(|n| n.starts_with("fsio test"))
            .collect();
        assert_eq!(got, ["fsio test: once"]);
    }
}
