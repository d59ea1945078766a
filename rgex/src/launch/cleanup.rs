//! What a job leaves behind and how the launcher removes it: the private
//! directory of the bootstrap socket, and shared-memory objects of the job
//! in `/dev/shm`.

use rgex_core::{Error, Result};
use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

/// Where POSIX shared-memory objects live on Linux.
const SHM_DIR: &str = "/dev/shm";

/// A Unix socket path must fit in `sun_path` (108 bytes on Linux, with
/// the terminating NUL); leave room for the file name inside the directory.
const MAX_DIR_LEN: usize = 80;

/// Nanoseconds since the epoch, strictly increasing within this process, so
/// two jobs or servers started in the same nanosecond still get distinct
/// names.
pub(crate) fn unique_stamp() -> u64 {
    static LAST: AtomicU64 = AtomicU64::new(0);
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0);
    // Relaxed is enough: only the value matters, it guards no other data.
    let mut last = LAST.load(Ordering::Relaxed);
    loop {
        let next = now.max(last + 1);
        match LAST.compare_exchange_weak(last, next, Ordering::Relaxed, Ordering::Relaxed) {
            Ok(_) => return next,
            Err(seen) => last = seen,
        }
    }
}

/// A job id unique on the node while the job runs: the launcher's pid and
/// a time stamp in hexadecimal, joined by `j`. Only `[0-9a-z]`, so it can be
/// embedded in shared-memory object names.
pub(crate) fn job_id() -> String {
    format!("{:x}j{:x}", std::process::id(), unique_stamp())
}

/// A fresh directory only this user can enter, removed (with its contents)
/// on drop.
#[derive(Debug)]
pub(crate) struct PrivateDir {
    path: PathBuf,
}

impl PrivateDir {
    /// Create `<tmp>/rgex-<pid>-<nanos>` with mode 0700. `<tmp>` is
    /// `$TMPDIR` unless that is too long for a socket path, then `/tmp`.
    pub(crate) fn create() -> Result<Self> {
        let mut base = std::env::temp_dir();
        if base.as_os_str().len() > MAX_DIR_LEN - 40 {
            base = PathBuf::from("/tmp");
        }
        let mut attempts = 0;
        loop {
            let path = base.join(format!("rgex-{}-{}", std::process::id(), unique_stamp()));
            match std::fs::DirBuilder::new().mode(0o700).create(&path) {
                Ok(()) => return Ok(PrivateDir { path }),
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists && attempts < 16 => {
                    attempts += 1;
                }
                Err(source) => {
                    return Err(Error::Os {
                        op: format!("create the launcher's private directory {}", path.display()),
                        source,
                    })
                }
            }
        }
    }

    /// The directory.
    pub(crate) fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for PrivateDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.path);
    }
}

/// Remove every `/dev/shm` entry whose name starts with `rgex-<job>-`,
/// returning the paths removed (empty when nothing was left behind).
pub(crate) fn sweep_shm(job: &str) -> Vec<PathBuf> {
    sweep_dir(Path::new(SHM_DIR), &format!("rgex-{job}-"))
}

/// Remove the `/dev/shm` files libfabric's shm provider names after a
/// process, `<pid>:<n>:<n>`, for the job's ranks `pids` (all gone by
/// now). A rank that was killed cannot remove its own, and a later
/// process given the same pid would fail to open its endpoint on it
/// (libfabric issue #6476).
pub(crate) fn sweep_rank_files(pids: &[u32]) -> Vec<PathBuf> {
    sweep_matching(Path::new(SHM_DIR), |name| is_rank_file(name, pids))
}

/// True if `name` is `<pid>:<n>:<n>` for one of `pids`.
fn is_rank_file(name: &str, pids: &[u32]) -> bool {
    let mut parts = name.split(':');
    let (Some(pid), Some(a), Some(b), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return false;
    };
    let number = |s: &str| !s.is_empty() && s.bytes().all(|c| c.is_ascii_digit());
    number(a) && number(b) && pid.parse::<u32>().is_ok_and(|p| pids.contains(&p))
}

fn sweep_dir(dir: &Path, prefix: &str) -> Vec<PathBuf> {
    sweep_matching(dir, |name| name.starts_with(prefix))
}

/// Remove the entries of `dir` whose names `keep_out` accepts.
fn sweep_matching(dir: &Path, keep_out: impl Fn(&str) -> bool) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut removed = Vec::new();
    for entry in entries.flatten() {
        let name = entry.file_name();
        if !keep_out(&name.to_string_lossy()) {
            continue;
        }
        let path = entry.path();
        let gone = match entry.file_type() {
            Ok(t) if t.is_dir() => std::fs::remove_dir_all(&path),
            _ => std::fs::remove_file(&path),
        };
        if gone.is_ok() {
            removed.push(path);
        }
    }
    removed.sort();
    removed
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn job_ids_are_distinct_and_plain() {
        let (a, b) = (job_id(), job_id());
        assert_ne!(a, b);
        assert!(a
            .bytes()
            .all(|c| c.is_ascii_digit() || c.is_ascii_lowercase()));
    }

    #[test]
    fn private_dir_is_removed_on_drop() {
        let dir = PrivateDir::create().unwrap();
        let path = dir.path().to_path_buf();
        std::fs::write(path.join("f"), b"x").unwrap();
        drop(dir);
        assert!(!path.exists());
    }

    #[test]
    fn rank_files_are_matched_by_pid_only() {
        let dir = PrivateDir::create().unwrap();
        let names = [
            "4242:0:1",
            "4242:3:12",
            "4243:0:1",
            "4242:0",
            "4242:a:1",
            "x4242:0:1",
            "4242:0:1:2",
        ];
        for f in names {
            std::fs::write(dir.path().join(f), b"x").unwrap();
        }
        let gone = sweep_matching(dir.path(), |name| is_rank_file(name, &[4242]));
        let mut left: Vec<String> = std::fs::read_dir(dir.path())
            .unwrap()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        left.sort();
        assert_eq!(gone.len(), 2);
        assert_eq!(
            left,
            ["4242:0", "4242:0:1:2", "4242:a:1", "4243:0:1", "x4242:0:1"]
        );
    }

    #[test]
    fn sweep_removes_only_the_prefix() {
        let dir = PrivateDir::create().unwrap();
        for name in ["rgex-abc-1", "rgex-abc-2", "rgex-abcd-1", "other"] {
            std::fs::write(dir.path().join(name), b"").unwrap();
        }
        let removed = sweep_dir(dir.path(), "rgex-abc-");
        assert_eq!(
            removed,
            vec![dir.path().join("rgex-abc-1"), dir.path().join("rgex-abc-2")]
        );
        assert!(dir.path().join("rgex-abcd-1").exists());
        assert!(dir.path().join("other").exists());
    }
}
