//! Named points where a test stops or holds the process (`CAIRN_FAILPOINT`, `CAIRN_PAUSEPOINT`):
//! how the crash and concurrency tests put a kill or another process's write between two steps.
//! The lowest layer: it imports nothing of cairn's, so any module may mark a point.

/// Stops the process here when `CAIRN_FAILPOINT` names this point: how tests prove that a
/// crash between two steps loses nothing.
pub fn failpoint(name: &str) {
    if std::env::var_os("CAIRN_FAILPOINT").is_some_and(|v| v == name) {
        std::process::abort();
    }
}

/// Holds the process here once when `CAIRN_PAUSEPOINT` names this point: it makes the file
/// `CAIRN_PAUSEFILE` and waits (at most a minute) until that file is removed. How tests put
/// another process's write between two steps of this one, deterministically.
pub fn pausepoint(name: &str) {
    static PAUSED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
    if std::env::var_os("CAIRN_PAUSEPOINT").is_none_or(|v| v != name)
        || PAUSED.swap(true, std::sync::atomic::Ordering::Relaxed)
    {
        return;
    }
    let Some(file) = std::env::var_os("CAIRN_PAUSEFILE").map(std::path::PathBuf::from) else {
        return;
    };
    if std::fs::write(&file, name).is_err() {
        return;
    }
    for _ in 0..12_000 {
        if !file.exists() {
            return;
        }
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
}
